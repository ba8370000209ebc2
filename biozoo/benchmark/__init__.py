"""Reproduce a paper's table: benchmark suites as data, a resumable task x seed grid of
fine-tuning runs, and reports of measured against published scores (`biozoo benchmark`);
the data sets' public sources (`biozoo data download`)."""

from biozoo.benchmark.grid import BenchmarkPlan, run_benchmark
from biozoo.benchmark.report import build_report, write_report
from biozoo.benchmark.suites import load_suite, suite_names

__all__ = ["BenchmarkPlan", "build_report", "load_suite", "run_benchmark", "suite_names", "write_report"]
