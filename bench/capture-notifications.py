#!/usr/bin/env python3
"""Signs COUNT App Store Server Notifications with the fake App Store and prints their signedPayloads, one per line.

    bench/capture-notifications.py FAKE_APPSTORE_BINARY PKI_DIR COUNT

Each is a DID_RENEW of another subscription (its own original transaction id), signed by `fake-appstore
send-notification` with the PKI of `fake-appstore mint-pki` and delivered to a one-request listener here, as Apple
would POST it. Used by bench/ingest.sh --notifications for realistic bodies (x5c chain, nested signed transaction and
renewal info) without a signature per request in the benchmark's client.
"""
import http.server
import json
import subprocess
import sys
import threading


def main():
    binary, pki, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    received = []

    class Capture(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body)["signedPayload"])
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    for index in range(count):
        transaction = str(2_000_000_900_000_000 + index)
        subprocess.run(
            [binary, "send-notification", "--signing-key", f"{pki}/signing-key.pem",
             "--signing-chain", f"{pki}/chain.pem", "--url", url, "--type", "DID_RENEW",
             "--transaction-id", transaction, "--original-transaction-id", transaction,
             "--retry-schedule-seconds", "none"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server.shutdown()
    if len(received) != count:
        sys.exit(f"captured {len(received)} notifications, expected {count}")
    for payload in received:
        print(payload)


if __name__ == "__main__":
    main()
