#!/usr/bin/python3
"""Chaos driver (many faults on one host): LeNet-5 at 2 ranks under
`tarantella --max-restarts K` with BackupAndRestore, hit by faults at random
times drawn from a printed seed, must end exactly where an undisturbed run
ends.

Faults (each makes the running attempt fail, so the launcher restarts it):
  kill      kill -9 of a random rank
  stop      SIGSTOP of a random rank, never continued: the other rank's
            collective times out (TNT_COMM_TIMEOUT) and the job ends
  backup    kill -9 of the writing rank while backup.pt is being written
            (its temporary file backup.pt.tmp.PID exists); when the window
            is not caught within a few seconds, a plain kill of rank 0
  double    kill -9 of a rank, then kill -9 of a rank of the restarted
            attempt before it has done a step (a second fault during the
            restart)
  enospc    the backup folder's file system (a tmpfs of --tmpfs-size, mounted
            in a private mount namespace the driver enters: root only, else
            exit status 77) is filled up; the next backup write fails with
            ENOSPC and ends the attempt; the driver checks the message (the
            file system, the path, what to do, no C++ type names) and that
            backup.pt is still there, then frees the space, and the restart
            continues from the previous backup

At the end it checks:
  * the launcher exits 0;
  * the final weights are byte for byte those of an undisturbed run (cmp);
  * no step was lost or done twice: lenet5 --step-log writes one line per
    optimizer step; replaying the attempts (each resumes where the backup
    was, as its "resuming from ... at epoch E, after step S" line says,
    dropping the steps after it) gives every step of every epoch exactly once;
  * every failed attempt was restarted ("restarting" lines) and the number of
    attempts is the number of faults that landed plus one;
  * no process of the job is left (every process started carries a marker
    in its environment; /proc is scanned for it);
  * the backup folder is empty: backup.pt removed after training, and the
    temporary files of killed backup writes (one is planted before the job
    starts) cleared away.

    chaos.py --launcher build/bin/tarantella --lenet5 build/bin/lenet5 \\
             [--seed S] [--faults N] [--epochs E] [--train-size T]

The seed fixes the sequence of faults, ranks and delays; where a fault lands
in training also depends on the machine's speed, so a replay with --seed S
repeats the same faults at the same delays. Exit status 0: all checks
passed; 1: a check failed (the reason and the seed are printed).
Python 3 standard library only.
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

KINDS = ["kill", "stop", "backup", "double", "enospc"]
DEFAULT_KINDS = ["kill", "stop", "backup", "double"]  # enospc needs root: asked for by name
SKIPPED = 77  # ctest's SKIP_RETURN_CODE: the enospc kind cannot run here


def log(message):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Failure(Exception):
    pass


def environ_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def marked_pids(marker):
    """Every live process whose environment carries the marker."""
    tag = f"TNT_TEST_MARKER={marker}".encode()
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        if tag in environ_of(name):
            try:
                with open(f"/proc/{name}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                pids.append(int(name))
    return pids


def rank_pids(marker, program):
    """{(attempt, rank): pid} of the processes running the program itself."""
    found = {}
    for pid in marked_pids(marker):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") != program:
                continue
        except OSError:
            continue
        env = dict(e.split(b"=", 1) for e in environ_of(pid) if b"=" in e)
        rank = env.get(b"OMPI_COMM_WORLD_RANK")
        attempt = env.get(b"TNT_RESTART_COUNT", b"0")
        if rank is not None:
            found[(int(attempt), int(rank))] = pid
    return found


def signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


class StepLog:
    """The lines lenet5 --step-log writes: (attempt, epoch, batch)."""

    def __init__(self, path):
        self.path = path

    def entries(self):
        try:
            with open(self.path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            m = re.fullmatch(r"step (\d+) (\d+) attempt (\d+)", line)
            if m:  # a line cut by kill -9 has no newline yet: skipped
                out.append((int(m[3]), int(m[1]), int(m[2])))
        return out

    def steps_of(self, attempt):
        return sum(1 for a, _, _ in self.entries() if a == attempt)


class Job:
    def __init__(self, args, work, marker, extra, out_name):
        self.args, self.marker = args, marker
        self.log_path = os.path.join(work, out_name + ".log")
        env = dict(os.environ, TNT_TEST_MARKER=marker)
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [args.launcher, "-n", "2", "--no-gpu", "-x", f"TNT_TEST_MARKER={marker}",
             f"TNT_COMM_TIMEOUT={args.comm_timeout}"] + extra,
            stdout=self.log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def alive(self):
        return self.proc.poll() is None

    def wait(self, seconds):
        try:
            return self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return None

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def lenet5_args(args):
    return ["--epochs", str(args.epochs), "--train-size", str(args.train_size),
            "--batch-size", "64", "--learning-rate", "0.02", "--val-size", "0",
            "--test-size", "256", "--seed", "3", "--verbose", "2"]


def until(predicate, seconds, job=None, step=0.01):
    """Polls until predicate() is true; False on timeout or when job ended."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if job is not None and not job.alive():
            return False
        time.sleep(step)
    return False


class Injector:
    def __init__(self, args, job, steps, backup_dir, rng):
        self.args, self.job, self.steps, self.backup_dir, self.rng = args, job, steps, backup_dir, rng
        self.attempt = 0      # the attempt the next fault aims at
        self.landed = 0       # faults that ended an attempt
        self.record = []      # (kind, attempt, detail)
        self.enospc_problems = []

    def ranks(self, attempt):
        return {r: p for (a, r), p in rank_pids(self.job.marker, self.args.lenet5).items()
                if a == attempt}

    def wait_training(self):
        """Until the newest attempt (not older than the one aimed at) has both
        ranks up and has logged a step; returns it, or None when the job
        ended. An attempt that failed without our doing is passed over (the
        final checks count it as a failure), so the faults go on landing."""
        def ready():
            seen = rank_pids(self.job.marker, self.args.lenet5)
            newest = max((a for a, _ in seen), default=-1)
            if newest < self.attempt:
                return None
            both = sum(1 for a, _ in seen if a == newest) == 2
            return (newest,) if both and self.steps.steps_of(newest) > 0 else None
        found = until(ready, 600, self.job, step=0.02)
        if not found:
            return None
        if found[0] != self.attempt:
            log(f"attempt {self.attempt} ended without a fault of ours; aiming at attempt {found[0]}")
        self.attempt = found[0]
        return self.attempt

    def wait_started(self, attempt):
        return until(lambda: len(self.ranks(attempt)) == 2, 120, self.job, step=0.002)

    def landed_fault(self, kind, attempt, detail):
        self.record.append((kind, attempt, detail))
        self.landed += 1
        log(f"fault {self.landed}: {kind} in attempt {attempt}: {detail}")
        self.attempt = attempt + 1

    def kill(self, attempt, rank, kind="kill"):
        pid = self.ranks(attempt).get(rank)
        if pid is None or not signal_pid(pid, signal.SIGKILL):
            return False
        self.landed_fault(kind, attempt, f"kill -9 rank {rank} (pid {pid})")
        return True

    def inject(self, kind):
        """One fault of the kind, in the current attempt; False if the job
        ended first (nothing landed)."""
        attempt = self.wait_training()
        if attempt is None:
            return False
        time.sleep(self.rng.uniform(0.0, self.args.max_delay))
        rank = self.rng.randrange(2)
        if not self.job.alive():
            return False
        if kind == "kill":
            return self.kill(attempt, rank)
        if kind == "stop":
            pid = self.ranks(attempt).get(rank)
            if pid is None or not signal_pid(pid, signal.SIGSTOP):
                return False
            self.landed_fault("stop", attempt, f"SIGSTOP rank {rank} (pid {pid}), never continued")
            return True
        if kind == "backup":
            tmp = re.compile(r"backup\.pt\.tmp\.(\d+)$")

            ranks = set(self.ranks(attempt).values())

            def writer():
                try:
                    for name in os.listdir(self.backup_dir):
                        m = tmp.match(name)
                        if m and int(m[1]) in ranks:  # not a leftover of an earlier attempt
                            return int(m[1])
                except FileNotFoundError:
                    pass
                return None
            pid = until(writer, self.args.backup_window, self.job, step=0.0005)
            if pid and signal_pid(pid, signal.SIGKILL):
                self.landed_fault("backup", attempt,
                                  f"kill -9 of the writer (pid {pid}) during a backup write")
                return True
            if not self.job.alive():
                return False
            log("backup window not caught: a plain kill of rank 0 instead")
            return self.kill(attempt, 0, kind="backup-missed")
        if kind == "double":
            if not self.kill(attempt, rank, kind="double-1"):
                return False
            if not self.wait_started(attempt + 1):
                return False
            time.sleep(self.rng.uniform(0.0, 0.3))
            second = self.rng.randrange(2)
            if self.steps.steps_of(attempt + 1) > 0:
                log("(the restarted attempt had already stepped: the second kill lands after its start)")
            return self.kill(attempt + 1, second, kind="double-2")
        if kind == "enospc":
            return self.fill_disk(attempt)
        raise ValueError(kind)

    def fill_disk(self, attempt):
        """Fills the backup folder's file system; waits for the write that
        fails, checks what the job said and that the previous backup is
        there, then frees the space."""
        # A backup to keep: the disk fills after the first one is written.
        backup = os.path.join(self.backup_dir, "backup.pt")
        if not until(lambda: os.path.exists(backup), 60, self.job, step=0.005):
            return False
        seen = self.job.text().count("No space left on device")
        filler = os.path.join(self.backup_dir, "filler")
        with open(filler, "wb", buffering=0) as f:  # unbuffered: close() writes nothing
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        said = until(lambda: self.job.text().count("No space left on device") > seen, 60, self.job,
                     step=0.05)
        before = os.path.exists(backup)
        os.remove(filler)
        if not said:
            return False
        line = next(l for l in self.job.text().splitlines()[::-1] if "No space left on device" in l)
        problems = [what for what, ok in [
            ("the file system's mount point", f"mounted at '{self.backup_dir}' (tmpfs" in line),
            ("the backup's path", os.path.join(self.backup_dir, "backup.pt") in line),
            ("what to do", "free space on that file system" in line),
            ("that the previous backup is intact", "the previous backup (at " in line),
            ("no C++ type names", not re.search(r"std::|__cxx11|filesystem_error", line)),
        ] if not ok]
        if not before:
            problems.append("backup.pt was gone after the failed write")
        self.enospc_problems += [f"ENOSPC message lacks {p}: {line}" for p in problems]
        self.landed_fault("enospc", attempt, "backup file system full (ENOSPC), freed after the "
                          f"failed write; message checked{' (PROBLEMS)' if problems else ''}")
        return True


def replay_steps(entries, resumes, epochs, per_epoch):
    """Replays the attempts; returns a list of problems (empty: all well).

    resumes[a] = (epoch, step) where attempt a started (1-based epoch, steps
    done in that epoch), from the launcher's log; attempt 0 starts at (1, 0).
    """
    problems = []
    done = []  # the steps that count, in order: (epoch, batch)
    attempts = sorted({a for a, _, _ in entries} | set(resumes))
    for a in attempts:
        start = resumes.get(a, (1, 0))
        # The backup holds every step before `start`: drop later ones.
        keep = [s for s in done if s < (start[0], start[1])]
        if len(keep) < len(done):
            pass  # steps after the backup, done again below: rolled back, not doubled
        missing = [(e, b) for e in range(1, start[0] + 1) for b in range(per_epoch)
                   if (e, b) < start and (e, b) not in set(keep)]
        if missing:
            problems.append(f"attempt {a} resumed at epoch {start[0]} step {start[1]}, but "
                            f"{len(missing)} earlier step(s) were never done, first {missing[0]}")
        done = keep + [(e, b) for x, e, b in entries if x == a]
    expected = [(e, b) for e in range(1, epochs + 1) for b in range(per_epoch)]
    if done != expected:
        dup = len(done) - len(set(done))
        lost = [s for s in expected if s not in set(done)]
        problems.append(f"the steps that count are not every step once: {len(done)} counted, "
                        f"{len(expected)} expected, {dup} done twice, {len(lost)} lost"
                        + (f" (first lost {lost[0]})" if lost else ""))
    return problems, len(done)


def parse_resumes(text):
    """{attempt: (epoch, steps done in it)} from the launcher's log, in order
    of the 'restarting' lines: the n-th resume line belongs to the attempt
    after the n-th restart. Returns also the number of restarts."""
    restarts = len(re.findall(r"restarting", text))
    resumes = {}
    attempt = 0
    for line in text.splitlines():
        if "restarting" in line:
            attempt += 1
            continue
        m = re.search(r"resuming from '.*' at epoch (\d+), after step (\d+)", line)
        if m:
            resumes[attempt] = (int(m[1]), int(m[2]))
            continue
        m = re.search(r"resuming from '.*' at the start of epoch (\d+)", line)
        if m:
            resumes[attempt] = (int(m[1]), 0)
    return resumes, restarts


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--launcher", required=True)
    p.add_argument("--lenet5", required=True)
    p.add_argument("--seed", type=int, default=None, help="replay this seed (default: a new one)")
    p.add_argument("--faults", type=int, default=4,
                   help="fault events to inject (default 4: one of each kind; a double is two faults)")
    p.add_argument("--kinds", default=",".join(DEFAULT_KINDS),
                   help=f"comma-separated fault kinds among {','.join(KINDS)} "
                        f"(default {','.join(DEFAULT_KINDS)})")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--train-size", type=int, default=3200, help="samples per epoch (batch 64)")
    p.add_argument("--backup-every", type=int, default=5, help="optimizer steps between backups")
    p.add_argument("--backup-in-background", action="store_true",
                   help="write the backups on a background thread while training goes on "
                        "(lenet5 --backup-in-background)")
    p.add_argument("--comm-timeout", type=float, default=10.0,
                   help="TNT_COMM_TIMEOUT of the ranks (default 10 s: at 2 s, ranks that start "
                        "more than 2 s apart on a loaded machine fail their first collective)")
    p.add_argument("--max-delay", type=float, default=1.0,
                   help="seconds after an attempt's first step within which a fault lands")
    p.add_argument("--backup-window", type=float, default=5.0,
                   help="seconds to wait for a backup write to kill")
    p.add_argument("--job-timeout", type=float, default=1800.0)
    p.add_argument("--tmpfs-size", default="2m",
                   help="size of the backup folder's tmpfs with the enospc kind (default 2m: "
                        "room for a LeNet-5 backup and its temporary file)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    args = p.parse_args()
    args.launcher = os.path.realpath(args.launcher)
    args.lenet5 = os.path.realpath(args.lenet5)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    kinds = args.kinds.split(",")
    for k in kinds:
        if k not in KINDS:
            p.error(f"--kinds: unknown kind '{k}': use some of {','.join(KINDS)}")
    if "enospc" in kinds and os.environ.get("TNT_CHAOS_MOUNT_NS") != "1":
        # A private mount namespace, so the small tmpfs is seen by this
        # driver and every rank it starts, and by nothing else.
        if (os.geteuid() != 0 or shutil.which("unshare") is None or
                subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode):
            print("SKIPPED: the enospc kind needs root and unshare (util-linux) for a private "
                  "tmpfs", flush=True)
            return SKIPPED
        argv = sys.argv[1:]
        if args.seed is None:
            argv += ["--seed", str(seed)]
        env = dict(os.environ, TNT_CHAOS_MOUNT_NS="1")
        return subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable,
                               os.path.realpath(__file__)] + argv, env=env).returncode
    rng = random.Random(seed)
    # Every kind equally often, in an order drawn from the seed.
    plan = [kinds[i % len(kinds)] for i in range(args.faults)]
    rng.shuffle(plan)
    per_epoch = (args.train_size + 63) // 64
    log(f"seed {seed} (replay: --seed {seed}); {args.faults} faults planned: {' '.join(plan)}")
    log(f"LeNet-5, 2 ranks, {args.epochs} epochs x {per_epoch} steps, backup every "
        f"{args.backup_every} steps, TNT_COMM_TIMEOUT={args.comm_timeout}")
    work = tempfile.mkdtemp(prefix="tnt-chaos.")
    marker = f"tnt-chaos-{os.getpid()}-{seed}"
    jobs = []
    try:
        ref = Job(args, work, marker + "-ref",
                  ["--", args.lenet5] + lenet5_args(args) +
                  ["--save-weights", os.path.join(work, "reference.pt")], "reference")
        jobs.append(ref)
        if ref.wait(args.job_timeout) != 0:
            raise Failure(f"the undisturbed run failed:\n{ref.text()}")
        log("undisturbed run done")

        backup_dir = os.path.join(work, "backup")
        # A temporary file of a backup write killed before this job: the
        # run must clear it away (and its own), leaving an empty folder.
        os.makedirs(backup_dir)
        if "enospc" in kinds:
            mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.tmpfs_size}",
                                      "tmpfs", backup_dir], capture_output=True, text=True)
            if mounted.returncode != 0:
                print(f"SKIPPED: cannot mount a tmpfs ({mounted.stderr.strip()})", flush=True)
                return SKIPPED
            log(f"backup folder on a {args.tmpfs_size} tmpfs of its own")
        open(os.path.join(backup_dir, "backup.pt.tmp.999999"), "w").close()
        steps = StepLog(os.path.join(work, "steps.log"))
        max_restarts = 2 * args.faults + 2  # a double fault is two restarts
        job = Job(args, work, marker, ["--max-restarts", str(max_restarts), "--", args.lenet5] +
                  lenet5_args(args) +
                  ["--backup-dir", backup_dir, "--backup-every", str(args.backup_every),
                   "--step-log", steps.path, "--save-weights", os.path.join(work, "chaos.pt")] +
                  (["--backup-in-background"] if args.backup_in_background else []),
                  "chaos")
        jobs.append(job)
        injector = Injector(args, job, steps, backup_dir, rng)
        for kind in plan:
            if not injector.inject(kind):
                log(f"the job ended before fault '{kind}' could land")
                break
        status = job.wait(args.job_timeout)
        if status is None:
            raise Failure(f"the job did not end within {args.job_timeout} s:\n{job.text()}")
        text = job.text()
        problems = []
        if status != 0:
            problems.append(f"the launcher exited with {status}")
        log(f"job ended (exit status {status}); {injector.landed} fault(s) landed")

        resumes, restarts = parse_resumes(text)
        attempts = {a for a, _, _ in steps.entries()}
        if restarts != injector.landed:
            problems.append(f"{restarts} restart(s) for {injector.landed} fault(s): "
                            f"{restarts - injector.landed} attempt(s) failed by themselves "
                            "(see the job's log below)")
        if max(attempts, default=0) != restarts:
            problems.append(f"the last attempt that stepped is {max(attempts, default=0)}, "
                            f"expected {restarts} (one per restart)")
        step_problems, counted = replay_steps(steps.entries(), resumes, args.epochs, per_epoch)
        problems += step_problems
        log(f"steps: {len(steps.entries())} logged over {len(attempts)} attempt(s), "
            f"{counted} count ({args.epochs * per_epoch} expected)")

        same = subprocess.run(["cmp", os.path.join(work, "reference.pt"),
                               os.path.join(work, "chaos.pt")]).returncode == 0
        log(f"final weights {'bitwise equal to' if same else 'DIFFER from'} the undisturbed run's")
        if not same:
            problems.append("final weights differ from the undisturbed run's (cmp)")

        left = until(lambda: not marked_pids(marker), 15) or not marked_pids(marker)
        if not left:
            problems.append(f"processes left: {marked_pids(marker)}")
        problems += injector.enospc_problems
        leftovers = sorted(os.listdir(backup_dir))
        if leftovers:
            problems.append(f"files left in the backup folder after training completed: {leftovers}")
        if problems:
            raise Failure("; ".join(problems) + f"\n--- the job's log:\n{text}")
        kinds_landed = {}
        for kind, _, _ in injector.record:
            kinds_landed[kind] = kinds_landed.get(kind, 0) + 1
        log(f"PASS: seed {seed}, {injector.landed} faults ({kinds_landed}), weights bitwise equal, "
            f"every step once, no process left")
        return 0
    except Failure as e:
        print(f"FAIL (seed {seed}; replay with --seed {seed}): {e}", flush=True)
        return 1
    finally:
        for j in jobs:
            if j.alive():
                j.proc.kill()
            j.log_file.close()
        for pid in marked_pids(marker) + marked_pids(marker + "-ref"):
            signal_pid(pid, signal.SIGKILL)
        if "enospc" in kinds:
            subprocess.run(["umount", os.path.join(work, "backup")], capture_output=True)
        if args.keep:
            log(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
