"""Reports of grading results: a terminal table, Gradescope results.json, a CSV gradebook."""
