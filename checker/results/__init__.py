"""What checking yields and how it is shown: Result (result), the printers text/herd/JSON/JUnit
(output), compact formulas of outcome sets (formula), execution graphs (witness)."""
