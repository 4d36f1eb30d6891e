#!/usr/bin/env python3
"""deploy/check's end-to-end smoke test against a running `bouncer serve` (admin token deploy-check-admin-token).

usage: check_smoke.py PORT SANDBOX_TRANSACTION_JWS_FILE
Creates a project for the vector's bundle id, posts the Apple-signed sandbox transaction, reads the user back.
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
                       token="deploy-check-admin-token")
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
