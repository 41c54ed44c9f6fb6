import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Decodes JSON documents with models that openapi-generator made from schemas/ (scripts/check-generated-clients.py
 * generates, compiles and runs this), with the ObjectMapper the generated client itself configures
 * (ApiClient.createDefaultObjectMapper), and writes each decoded model back as JSON, so the caller can compare every
 * value with the document's: a 64-bit millisecond date read into an int field fails here, one read into a double
 * comes back changed.
 *
 * Argument: a file of lines "<model class>\t<JSON file>". Output: one line per document, "<JSON file>\t<JSON>" or
 * "<JSON file>\tERROR\t<what failed>". Exit status 0 when every document was decoded.
 */
public final class DecodeWithGeneratedJava {
    public static void main(String[] arguments) throws Exception {
        List<String> lines = Files.readAllLines(Path.of(arguments[0]));
        boolean failed = false;
        for (String line : lines) {
            String[] parts = line.split("\t");
            String modelName = parts[0];
            Path document = Path.of(parts[1]);
            try {
                Class<?> model = Class.forName(modelName);
                String invokerPackage = modelName.substring(0, modelName.indexOf(".model."));
                ObjectMapper mapper = (ObjectMapper) Class.forName(invokerPackage + ".ApiClient")
                        .getMethod("createDefaultObjectMapper").invoke(null);
                Object decoded = mapper.readValue(Files.readAllBytes(document), model);
                System.out.println(document + "\t" + mapper.writeValueAsString(decoded));
            } catch (Exception error) {
                failed = true;
                Throwable cause = error.getCause() != null ? error.getCause() : error;
                String message = String.valueOf(cause.getMessage()).replace('\n', ' ').replace('\t', ' ');
                System.out.println(document + "\tERROR\t" + cause.getClass().getSimpleName() + ": " + message);
            }
        }
        System.exit(failed ? 1 : 0);
    }
}
