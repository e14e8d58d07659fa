"""Side-by-side MaskBench harness: stencil against llguidance, XGrammar and outlines-core.

Follows MaskBench (JSONSchemaBench): for each schema file, TTFM is the time to compile the schema
and have a matcher ready for its first mask; then for each test instance (serialized with
``json.dumps(data, indent=None, ensure_ascii=False)``, tokenized without special tokens by the
tokenizer's own encoder) the matcher is reset and fed token by token, and TBM is the time to
compute one mask and accept one token. Valid instances must be accepted with EOS allowed at the
end; invalid ones must be rejected. Every engine runs in its own worker process under a time and
memory limit per schema, so a crash or a hang is recorded and the run goes on.

Example::

    python -m benchmarks.maskbench ../shared/data/maskbench-dev --tokenizer deepseek \\
        --engines stencil,llguidance,xgrammar,outlines --limit 100 --output /tmp/mb

From Python: ``main(argv)``, or ``add_arguments(parser)`` then ``run(args)`` to embed the command
in another argparse program.
"""
from benchmarks.maskbench.cli import add_arguments, main, run

__all__ = ["add_arguments", "main", "run"]
