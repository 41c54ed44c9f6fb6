"""Independent oracle for SignedDataTests: Apple's own Python library (app-store-server-library) and PyJWT.

Reads one JSON request on stdin, writes one JSON answer on stdout. Requests:
  {"op": "verify-transactions", "root": <base64 DER>, "bundleId": ..., "cases": [{"name": ..., "jws": ...}]}
      -> {"name": "ok" | "VERIFICATION_FAILURE" | "INVALID_CHAIN_LENGTH" | ...}
  {"op": "verify-jwt", "token": ..., "publicKeyDER": <base64 SPKI>}
      -> {"header": {...}, "claims": {...}}  (signature and audience checked by PyJWT)
"""
import base64
import json
import sys

import jwt
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException
from cryptography.hazmat.primitives.serialization import load_der_public_key


def verify_transactions(request):
    verifier = SignedDataVerifier(
        root_certificates=[base64.b64decode(request["root"])],
        enable_online_checks=False,
        environment=Environment.SANDBOX,
        bundle_id=request["bundleId"],
        app_apple_id=1234,
    )
    answers = {}
    for case in request["cases"]:
        try:
            verifier.verify_and_decode_signed_transaction(case["jws"])
            answers[case["name"]] = "ok"
        except VerificationException as error:
            answers[case["name"]] = error.status.name
    return answers


def verify_jwt(request):
    key = load_der_public_key(base64.b64decode(request["publicKeyDER"]))
    claims = jwt.decode(request["token"], key, algorithms=["ES256"], audience="appstoreconnect-v1",
                        options={"verify_exp": False, "verify_iat": False})
    return {"header": jwt.get_unverified_header(request["token"]), "claims": claims}


request = json.load(sys.stdin)
operations = {"verify-transactions": verify_transactions, "verify-jwt": verify_jwt}
json.dump(operations[request["op"]](request), sys.stdout)
