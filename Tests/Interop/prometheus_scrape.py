#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Scrapes a relay's /metrics as Prometheus does and parses it with Prometheus' own Python parser
(prometheus-client, pinned in scripts/setup.sh). One scrape per run, one JSON line out:

  prometheus_scrape.py URL [TOKEN]
    -> {"event": "result", "status": 200, "content_type": "...",
        "samples": [{"name": ..., "labels": {...}, "value": ..., "type": ...}, ...]}
    -> {"event": "result", "status": 401, "body": "..."}           (refused)
    -> {"event": "result", "status": 200, "error": "..."}          (the text does not parse)
"""
import json
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    url = sys.argv[1]
    request = urllib.request.Request(url)
    if len(sys.argv) > 2:
        request.add_header("Authorization", f"Bearer {sys.argv[2]}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, content_type, body = response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        print(json.dumps({"event": "result", "status": error.code, "body": error.read().decode()}), flush=True)
        return 0
    result = {"event": "result", "status": status, "content_type": content_type}
    try:
        samples = []
        for family in text_string_to_metric_families(body.decode()):
            for sample in family.samples:
                samples.append(
                    {"name": sample.name, "labels": sample.labels, "value": sample.value, "type": family.type}
                )
        result["samples"] = samples
    except Exception as exc:  # the parser's refusal is the finding
        result["error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
