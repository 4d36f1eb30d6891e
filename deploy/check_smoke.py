#!/usr/bin/env python3
"""deploy/check's end-to-end smoke test against a running `bouncer serve` (admin token deploy-check-admin-token-0123456789abcdef).

usage: check_smoke.py PORT SANDBOX_TRANSACTION_JWS_FILE [SANDBOX_NOTIFICATION_JWS_FILE]
Creates a project for the vectors' bundle id, posts the Apple-signed sandbox transaction, reads the user back, and
delivers the notification to the webhook twice (Apple retries; the second must be a harmless 200).
"""
import json
import sys
import urllib.error
import urllib.request

port, vector = sys.argv[1], sys.argv[2]


def call(method, path, body=None, token=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


status, project = call("POST", "/v1/admin/projects",
                       {"name": "deploy-check", "bundle_id": "com.loki-project.loki-messenger", "environments": ["Sandbox"]},
                       token="deploy-check-admin-token-0123456789abcdef")
if status != 201:
    sys.exit(f"create project: {status} {project}")
status, receipt = call("POST", f"/v1/receipts/{project['public_key']}",
                       {"signed_transaction_info": open(vector).read().strip(), "user_id": "deploy-check-user"})
if status != 201 or receipt.get("valid") is not True or receipt.get("transaction_id") != "2000001024998954":
    sys.exit(f"post receipt: {status} {receipt}")
status, read = call("GET", f"/v1/subscriptions/{project['public_key']}/deploy-check-user")
if status != 200 or read.get("user_id") != "deploy-check-user" or len(read.get("subscriptions", [])) != 1:
    sys.exit(f"get subscriptions: {status} {read}")
print(f"     receipt 201: transaction {receipt['transaction_id']}, status {receipt.get('status')}; "
      f"user status {read.get('status')}")

# The App Store Server Notifications webhook, as App Store Connect will call it: twice, as Apple retries.
if len(sys.argv) > 3:
    signed = open(sys.argv[3]).read().strip()
    answers = [call("POST", f"/v1/notifications/{project['public_key']}", {"signedPayload": signed}) for _ in range(2)]
    if any(status != 200 for status, _ in answers):
        sys.exit(f"post notification: {answers}")
    print(f"     webhook 200 twice: {answers[0][1].get('status')}, then {answers[1][1].get('status')}")
