# SPDX-License-Identifier: MIT
"""The pieces of scripts/bench.py (`make bench`): processes, statistics, cases, report, chart."""
