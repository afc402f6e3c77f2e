"""The typer options several commands share, each declared once (`options.JOBS` in every
command that takes --jobs)."""

import typer

SIZE = typer.Option(None, "--size", help="tiny, quick (the default) or full.")
TINY = typer.Option(False, "--tiny", help="Shortcut for --size tiny (runs in seconds).")
QUICK = typer.Option(False, "--quick", help="Shortcut for --size quick.")
FULL = typer.Option(False, "--full", help="Shortcut for --size full.")
SEED_OFFSET = typer.Option(0, "--seed-offset", help="Seeds K, K+1, … instead of 0, 1, … (a "
                           "disjoint set, kept in its own results folder).")
RESULTS = typer.Option("runs", "--results", metavar="DIR", help="Folder of suite results, "
                       "shared by suite, report, claims and ladder (resumable).")
JOBS = typer.Option(None, "--jobs", "-j", help="Runs at once in worker processes, each "
                    "single-threaded (default: the usable cores); timed runs run alone.")
JSON = typer.Option(False, "--json", help="Print JSON instead of tables.")
NO_PROGRESS = typer.Option(False, "--no-progress", help="Hide the progress bars.")
NO_WAIT = typer.Option(False, "--no-wait", help="If another blocklab process is running a "
                       "suite in the same results folder, stop with an error instead of "
                       "waiting for it.")
DEVICE = typer.Option("cpu", "--device", help="Where the models train: cpu, cuda or "
                      "cuda:<index> (on a GPU, bf16 is the same mixed precision on its bf16 "
                      "units and attention is PyTorch's fused kernel). Runs on cuda go one "
                      "after another in this process; each records its device.")
# Where suite runs execute (`suite`, `report`).
EXECUTOR = typer.Option("process", "--executor", help="process (worker processes on this "
                        "machine, see --jobs) or ray (each run a Ray task).")
ADDRESS = typer.Option(None, "--address", help="Ray: the cluster to join, auto, HEAD_IP:6379 "
                       "or local (a new instance here); default: $RAY_ADDRESS, else a cluster "
                       "running here, else local.")
CPUS_PER_RUN = typer.Option(None, "--cpus-per-run",
                            help="Ray: CPUs each run reserves (default: 1).")
GPUS_PER_RUN = typer.Option(None, "--gpus-per-run",
                            help="Ray: GPUs each run reserves (default: 0).")
