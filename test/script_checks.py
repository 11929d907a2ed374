"""The check convention of the script tests (test_ab_report.py, test_fit_cost_model.py): check() prints and records
every failed condition, so that one run reports all of them, and exit_status() ends the run with their count."""

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAILED: {what}")


def exit_status(name):
    """Prints how the checks of `name` went; returns main()'s exit status: 1 where any failed, else 0."""
    if failures:
        print(f"{name}: {len(failures)} check(s) failed")
        return 1
    print(f"{name}: all checks passed")
    return 0
