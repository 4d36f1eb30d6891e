#!/usr/bin/env python3
"""Count response statuses (and error codes) per operation in a schemathesis NDJSON report, to show what the run
actually exercised: e.g. that POST /v1/receipts got 201s from the real JWS, not only rejections.

    statuses.py REPORT.ndjson
"""
import base64
import collections
import json
import sys


def main() -> None:
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in open(sys.argv[1]):
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished:
            continue
        recorder = finished.get("recorder") or {}
        for interaction in (recorder.get("interactions") or {}).values():
            response = interaction.get("response") or {}
            request = interaction.get("request") or {}
            status = response.get("status_code")
            if status is None:
                continue
            label = f'{request.get("method", "?")} {recorder.get("label", "?").split(" ", 1)[-1]}'
            code = ""
            content = response.get("content") or ""
            if isinstance(content, dict):  # {"$base64": ...}
                content = base64.b64decode(content.get("$base64", "")).decode("utf-8", "replace")
            try:
                body = json.loads(content)
                if isinstance(body, dict) and isinstance(body.get("code"), str):
                    code = " " + body["code"]
            except (ValueError, TypeError):
                pass
            counts[label][f"{status}{code}"] += 1
    for label in sorted(counts):
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(counts[label].items()))
        print(f"{label}\n    {parts}")


if __name__ == "__main__":
    main()
