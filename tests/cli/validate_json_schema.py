#!/usr/bin/python3
"""Validates JSON files against a JSON Schema (draft 2020-12) with Debian's python3-jsonschema.

usage: validate_json_schema.py SCHEMA.json [--def NAME] INSTANCE.json...

Prints one line per instance: "NAME: ok", or one line per error, "NAME: PATH: MESSAGE" (PATH the
instance's keys joined by '/'), sorted. --def validates against the schema's $defs/NAME instead of
its root. Exit 0 when every instance is valid, 1 otherwise.
"""
import json
import os
import sys

import jsonschema


def main(argv):
    schema_path, rest = argv[1], argv[2:]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    if rest[:1] == ["--def"]:
        schema = dict(schema, **{"$ref": "#/$defs/" + rest[1]})
        rest = rest[2:]
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    all_valid = True
    for path in rest:
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            instance = json.load(f)
        lines = sorted(
            "{}: {}: {}".format(name, "/".join(str(p) for p in e.absolute_path), e.message)
            for e in validator.iter_errors(instance))
        all_valid = all_valid and not lines
        print("\n".join(lines) if lines else name + ": ok")
    return 0 if all_valid else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
