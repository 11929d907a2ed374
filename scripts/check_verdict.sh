# The end of a check script (sourced by scripts/solver_check.sh and python/gpu_check.sh): every failed step is
# added to the array `failures`; check_verdict FAILED_LINE PASSED_LINE then prints "FAILED_LINE: <the failures>"
# and exits 1, or prints PASSED_LINE and exits 0.
check_verdict() {
  if ((${#failures[@]})); then
    echo "$1: ${failures[*]}"
    exit 1
  fi
  echo "$2"
  exit 0
}
