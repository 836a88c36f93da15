"""The report as JUnit XML: `checker.results.output.junit` (one testcase per test, so per matrix row),
plus a second testsuite `ptxmc.hardware` with one testcase per hardware comparison when there
are histograms (what fails `ptxmc hw compare` - a violation, a harness error, no data, too many
timeouts or hangs the model does not allow, an unseen positive control - is a failure; a coverage
gap passes with a note in system-out)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from ..harness.compare import BAD
from ..results.output import junit as model_junit, mark_partial


def render(report) -> str:
    text = model_junit([t.result for t in report.tests], timing=report.timing)
    if report.interrupted:
        text = mark_partial("junit", text, *report.interrupted)
    if not report.hardware:
        return text
    root = ET.fromstring(text)
    suite = ET.SubElement(root, "testsuite", {"name": "ptxmc.hardware", "tests": str(len(report.hardware)),
                                             "failures": "0", "errors": "0", "skipped": "0", "time": "0.000"})
    fails = 0
    for c in report.hardware:
        case = ET.SubElement(suite, "testcase", {"classname": "hardware", "name": c.test, "time": "0.000"})
        if c.verdict in BAD:
            fails += 1
            ET.SubElement(case, "failure", {"message": c.summary(), "type": c.verdict}).text = c.summary()
        elif c.verdict != "ok":
            ET.SubElement(case, "system-out").text = c.summary()
    suite.set("failures", str(fails))
    for k in ("tests", "failures"):
        root.set(k, str(sum(int(s.get(k, "0")) for s in root.findall("testsuite"))))
    ET.indent(root, "  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
