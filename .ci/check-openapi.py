"""Checks that openapi.yaml is a valid OpenAPI 3.1 document and says what its author meant.

The validator alone misses YAML slips that still parse: an unquoted `, ` or `: ` inside a flow mapping
(`{ description: a, b }`) splits into an extra key with a null value, and a repeated key silently wins.
Schemas allow unknown keys, so only this check catches those. It also requires the answers the server can
give on any route: 413 and 415 where there is a body, 429 on the API's routes.

Usage: python3 .ci/check-openapi.py openapi.yaml
"""
import sys

import yaml
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

problems = []


class StrictLoader(yaml.SafeLoader):
    """A SafeLoader that reports duplicate keys and keys without a value."""


def construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in seen:
            problems.append(f"line {line}: duplicate key {key!r}")
        seen.add(key)
        if value_node.tag == "tag:yaml.org,2002:null" and value_node.value == "":
            problems.append(f"line {line}: key {key!r} has no value (an unquoted ', ' or ': ' in a flow mapping?)")
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)

path = sys.argv[1] if len(sys.argv) > 1 else "openapi.yaml"
with open(path, encoding="utf-8") as file:
    yaml.load(file, StrictLoader)
document, _ = read_from_filename(path)
if document.get("openapi", "").split(".")[:2] != ["3", "1"]:
    problems.append(f"openapi: {document.get('openapi')!r}, expected 3.1.x")
try:
    validate(document)
except Exception as error:  # the validator's own error type varies by version; its message names the place
    problems.append(f"OpenAPI 3.1: {error}")
# Answers the server gives whatever the route: 413 and 415 to any request with a body (HTTPCore's body limit,
# RequestBody's media type), 429 on every API route (each declares rate-limit scopes in Routes.swift; only the
# executable's health and metrics routes have none).
for route, item in document.get("paths", {}).items():
    for method, operation in item.items():
        if method == "parameters":
            continue
        required = ["413", "415"] if "requestBody" in operation else []
        if route.startswith(("/v1/", "/.well-known/")):
            required.append("429")
        for status in required:
            if status not in operation.get("responses", {}):
                problems.append(f"{method.upper()} {route}: does not document {status}")
for problem in problems:
    print(f"{path}: {problem}")
operations = sum(1 for item in document.get("paths", {}).values() for key in item if key != "parameters")
print(f"openapi: {path} {'invalid' if problems else 'valid OpenAPI ' + document['openapi']}, {operations} operations")
sys.exit(1 if problems else 0)
