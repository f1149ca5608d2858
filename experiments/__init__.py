"""One-off experiments: experiments/<name>/ holds a probe, the records it wrote and a README
(what it tested, what it found, what was decided).  Probes run from the repository root as
modules, ``python3 -m experiments.<name>.<probe>``; what several of them use is in
experiments/_shared.py.  The package reads their records through
gemm_lessons.records.results.experiment / experiment_record.  See README.md here.
"""
