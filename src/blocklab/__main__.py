from blocklab.cli import run

run()
