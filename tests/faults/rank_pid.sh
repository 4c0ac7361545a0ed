# Sourced by the fault tests. rank_pid PROGRAM MARKER RANK prints the pid of
# the process running PROGRAM itself (not its launcher wrapper) as rank RANK
# of the job started with -x TNT_TEST_MARKER=MARKER; nothing if none. A
# PROGRAM ending in .py is the Python process whose first argument it is.
rank_pid() {
  local target p env
  target=$(readlink -f "$1")
  for p in $(pgrep -f "$target"); do
    if [ "${target%.py}" != "$target" ]; then
      [ "$(tr '\0' '\n' < /proc/"$p"/cmdline 2>/dev/null | sed -n 2p)" = "$target" ] || continue
      case "$(readlink -f /proc/"$p"/exe 2>/dev/null)" in */python3*) ;; *) continue ;; esac
    else
      [ "$(readlink -f /proc/"$p"/exe 2>/dev/null)" = "$target" ] || continue
    fi
    env=$(tr '\0' '\n' < /proc/"$p"/environ 2>/dev/null) || continue
    grep -qx "TNT_TEST_MARKER=$2" <<<"$env" || continue
    grep -qx "OMPI_COMM_WORLD_RANK=$3" <<<"$env" && { echo "$p"; return 0; }
  done
  return 0
}
