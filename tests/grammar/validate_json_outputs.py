#!/usr/bin/python3
"""Validates grammar-constrained outputs against their JSON Schemas.

Input: a JSON file [{"schema": {...}, "outputs": ["...", ...]}, ...].
Every output must parse as JSON and validate (Draft 2020-12, formats
checked). jsonschema's own checkers cover date, uuid, email and ipv4;
date-time and time (which need a package Debian lacks) are checked with
Python's datetime parser on the RFC 3339 shape.
Prints one line per failure and a summary; exit status 1 on any failure.
"""
import datetime
import json
import re
import sys

import jsonschema

checker = jsonschema.Draft202012Validator.FORMAT_CHECKER


@checker.checks("date-time", raises=ValueError)
def is_date_time(s):
    if not isinstance(s, str):
        return True
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", s):
        return False
    datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    return True


@checker.checks("time", raises=ValueError)
def is_time(s):
    if not isinstance(s, str):
        return True
    if not re.fullmatch(r"\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", s):
        return False
    datetime.time.fromisoformat(s.replace("Z", "+00:00"))
    return True


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    num_outputs = 0
    failures = 0
    for i, case in enumerate(cases):
        validator = jsonschema.Draft202012Validator(case["schema"], format_checker=checker)
        for out in case["outputs"]:
            num_outputs += 1
            try:
                value = json.loads(out)
            except ValueError as e:
                failures += 1
                print(f"schema {i}: output does not parse ({e}): {out!r}")
                continue
            errors = list(validator.iter_errors(value))
            if errors:
                failures += 1
                print(f"schema {i}: {errors[0].message}: {out!r}")
    print(f"validated {num_outputs} outputs of {len(cases)} schemas, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
