#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The failed tests of a Swift Testing xUnit report (`swift test --xunit-output F` writes
F-swift-testing.xml), one `swift test --filter` pattern per line: `(^|[./])Suite/function(...)`.
Nothing when the report is missing or unreadable (a crashed run: nothing to rerun)."""
import re
import sys
import xml.etree.ElementTree as ET

try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    sys.exit(0)
for case in root.iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        suite = case.get("classname", "").split(".")[-1]
        print(f"(^|[./]){re.escape(suite)}/{re.escape(case.get('name', ''))}")
