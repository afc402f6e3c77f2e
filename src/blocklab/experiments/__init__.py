"""Seeded, deterministic, resumable training experiments on built-in data.

    data        corpora (stdlib, shakespeare, your files), `ByteTokenizer`, batch sampler
    synthetic   passkey retrieval; `passkey_accuracy`
    init        named initialisations (gpt2, xavier, fan_in, depth, default)
    trainer     `TrainConfig`, `train`, `run` -> one `RunResult`
    run_result  `RunResult`, a run's typed result (no PyTorch)
    options     `RunRequest` (what one command asks) and `RunOptions` (one suite's invocation)
    results     `run_id`, `ResultStore` (a folder of results; imports no trainer, no PyTorch)
    env         the environment record stored in every result
    suites      the registered suites (`blocklab.experiments.suites`)
"""
