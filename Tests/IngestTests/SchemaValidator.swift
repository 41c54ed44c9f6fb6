import Foundation
import TestSupport

/// Validates JSON instances against the project's schemas with an independent validator: Python's `jsonschema`
/// (draft 2020-12), with every file in `schemas/` registered so `$ref`s between them resolve, and `openapi.yaml`
/// registered as `openapi.yaml` beside them so its component schemas can be used (`SchemaValidator.openAPI`
/// + `#/components/schemas/Error`) and its relative `$ref`s to the message schemas resolve.
enum SchemaValidator {
    struct Case: Encodable {
        /// A file in `schemas/` (`submission.schema.json`), or one with a JSON pointer
        /// (`openapi.yaml#/components/schemas/Error`).
        let schema: String
        /// The instance as JSON text.
        let instance: String
    }

    static let schemasDirectory: String = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("schemas").path
    }()

    private static let script = """
        import json, sys, pathlib, yaml
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
        directory = pathlib.Path(sys.argv[1])
        base = "https://receipt-verification.invalid/schemas/"
        resources = []
        for path in sorted(directory.glob("*.schema.json")):
            contents = json.loads(path.read_text())
            Draft202012Validator.check_schema(contents)
            resources.append((base + path.name, DRAFT202012.create_resource(contents)))
        openapi = yaml.safe_load((directory / "openapi.yaml").read_text())
        resources.append((base + "openapi.yaml", DRAFT202012.create_resource(openapi)))
        registry = Registry().with_resources(resources)
        results = []
        for case in json.load(sys.stdin):
            target = base + case["schema"]
            validator = Draft202012Validator({"$ref": target}, registry=registry)
            instance = json.loads(case["instance"])
            errors = validator.iter_errors(instance)
            results.append([f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors])
        json.dump(results, sys.stdout)
        """

    /// The validation errors of each case, in order (empty = valid).
    static func errors(_ cases: [Case]) throws -> [[String]] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, schemasDirectory]
        let input = Pipe()
        let output = Pipe()
        let errorOutput = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errorOutput
        try process.run()
        input.fileHandleForWriting.write(try JSONEncoder().encode(cases))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let diagnostics = errorOutput.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestSupportError(
                "schema validator failed (is python3-jsonschema installed? `make deps`): "
                    + String(decoding: diagnostics, as: UTF8.self))
        }
        return try JSONDecoder().decode([[String]].self, from: data)
    }

    static func errors(_ instance: [UInt8], schema: String) throws -> [String] {
        try errors([Case(schema: schema, instance: String(decoding: instance, as: UTF8.self))])[0]
    }
}
