"""Reproduce a paper's table: benchmark suites as data, a resumable task x seed grid of
fine-tuning runs, and reports of measured against published scores (`biozoo benchmark`);
the data sets' public sources (`biozoo data download`)."""

from biozoo._lazy import lazy_names

# public name -> the module that defines it (imported when first used: the command line stays light)
_PUBLIC = {
    "BenchmarkPlan": "biozoo.benchmark.grid",
    "run_benchmark": "biozoo.benchmark.grid",
    "build_report": "biozoo.benchmark.report",
    "write_report": "biozoo.benchmark.report",
    "load_suite": "biozoo.benchmark.suites",
    "suite_names": "biozoo.benchmark.suites",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
