"""Command-line plumbing shared by every entry point of the project.

* :class:`ArgumentParser`: a bad argument is one line naming the value
  (``prog: error: ...``, exit status 2), without the usage block.
* :func:`guarded`: every entry point's ``main`` is wrapped in it, so an
  internal failure (an exception that escapes: a bug) ends with one line
  on stderr naming the command and its parameter set and saying it is a
  bug to report, exit status :data:`INTERNAL_ERROR`, never a traceback.
* :func:`legal_space`: the legal parameter space of contract section 1
  and the combinations the IP refuses, as help text, from
  ``contract/facts.py``.
"""

import argparse
import functools
import pathlib
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version

from neuron_fabric.contract import facts
from neuron_fabric.contract.facts import ParameterError

__all__ = ["ArgumentParser", "guarded", "parameter_set", "package_version", "write_error",
           "INTERNAL_ERROR", "legal_space"]

#: Exit status of an internal failure (BSD ``EX_SOFTWARE``).
INTERNAL_ERROR = 70

#: What the running command was asked to do: its parser's ``prog`` and the
#: parsed arguments (:meth:`ArgumentParser.parse_known_args`), and the
#: parameter set it named (:func:`parameter_set`).
_CURRENT = {}


class _ParagraphFormatter(argparse.HelpFormatter):
    """Wraps a description or epilog paragraph by paragraph (a blank line
    between two)."""

    def _fill_text(self, text, width, indent):
        return "\n\n".join(textwrap.fill(" ".join(par.split()), width, initial_indent=indent,
                                         subsequent_indent=indent)
                           for par in text.split("\n\n"))


def _at_least_one(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


class ArgumentParser(argparse.ArgumentParser):
    """An ``argparse`` parser whose errors are one line naming the bad value
    (``prog: error: ...``, exit status 2), without the usage block.  The
    arguments it parsed name the parameter set of an internal failure
    (:func:`guarded`).  With ``parameters=True`` its help ends with the
    legal parameter space (:func:`legal_space`)."""

    def __init__(self, *args, parameters=False, **kwargs):
        if parameters:
            kwargs["epilog"] = "\n\n".join(filter(None, [kwargs.get("epilog"), legal_space()]))
        kwargs.setdefault("formatter_class", _ParagraphFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")

    def add_parameters(self, profile_help=None):
        """The parameters of contract section 1 (``--line-bits`` ...
        ``--max-outstanding``, their legal values and defaults from
        ``contract/facts.py``), and ``--profile`` with ``profile_help``."""
        span = lambda rng: f"{rng.start}..{rng.stop - 1}"           # noqa: E731
        for name, what, legal in (
                ("line_bits", "bits per line", f"one of {facts.LINE_BITS_CHOICES}"),
                ("workers", "workers per lane", f"one of {facts.WORKERS_CHOICES}"),
                ("stages", "datapath latency in cycles", span(facts.STAGES_RANGE)),
                ("regions", "region-table entries of the top", span(facts.REGIONS_RANGE)),
                ("max_outstanding", "reads+writes in flight in the top",
                 span(facts.MAX_OUTSTANDING_RANGE))):
            self.add_argument("--" + name.replace("_", "-"), type=int,
                              default=facts.DEFAULTS[name], metavar="N",
                              help=f"{what}, {legal} (default %(default)s)")
        if profile_help:
            self.add_argument("--profile", choices=sorted(facts.PROFILES), default="full",
                              help=f"{profile_help} (default %(default)s)")

    def add_version(self):
        """``--version``: the installed neuron-fabric's version."""
        self.add_argument("--version", action="version",
                          version=f"%(prog)s {package_version()}")

    def add_jobs(self, default=2, what="processes"):
        """``--jobs N``, N at least 1 (an error naming the value otherwise)."""
        self.add_argument("--jobs", type=_at_least_one, default=default, metavar="N",
                          help=f"{what} (default %(default)s)")

    def parse_known_args(self, args=None, namespace=None):
        parsed, rest = super().parse_known_args(args, namespace)
        _CURRENT.update(prog=self.prog, args=parsed)
        return parsed, rest


def package_version():
    """The installed neuron-fabric's version (the release's)."""
    try:
        return version("neuron-fabric")
    except PackageNotFoundError:
        return "(not installed)"


def write_error(path, exc):
    """Why ``path`` could not be written (``exc``, an ``OSError``), in a
    few words: a folder on its way that is a file is named as such."""
    path = pathlib.Path(path)
    blocker = next((a for a in path.parents if a.exists() and not a.is_dir()), None)
    if blocker is not None:
        return f"{str(blocker)!r} is a file, not a folder"
    return exc.strerror or str(exc)


def parameter_set(text):
    """Name the parameter set the running command works on (e.g. a
    ``TopParams``' fields): an internal failure after this call names it
    instead of the command's arguments."""
    _CURRENT["params"] = str(text)


def _describe(argv):
    """The parameter set of the running command, on one line."""
    if "params" in _CURRENT:
        return _CURRENT["params"]
    args = _CURRENT.get("args")
    if args is not None:
        return " ".join(f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
                        for name, value in sorted(vars(args).items()))
    return "arguments " + " ".join(argv) if argv else "no arguments"


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def guarded(main=None, *, prog=None):
    """Decorate an entry point's ``main(argv=None)``: an exception that
    escapes it prints one line on stderr, ``<prog>: internal error with
    <parameter set>: <exception> -- this is a bug; please report it with
    this line``, and ``main`` returns :data:`INTERNAL_ERROR`.  A
    :class:`~neuron_fabric.contract.facts.ParameterError` (a parameter outside
    contract section 1) is the user's error: one line ``<prog>: error:
    ...``, status 2.  ``SystemExit`` (argument errors, explicit exits) and
    ``KeyboardInterrupt`` pass.
    ``prog`` defaults to the parser's, else ``python -m <module>``."""
    if main is None:
        return functools.partial(guarded, prog=prog)

    @functools.wraps(main)
    def run(argv=None, *args, **kwargs):
        outer = dict(_CURRENT)                   # (an entry point run by another)
        _CURRENT.clear()
        try:
            return main(argv, *args, **kwargs)
        except ParameterError as exc:            # a parameter outside the legal space
            name = prog or _CURRENT.get("prog") or f"python -m {main.__module__}"
            print(f"{name}: error: {_one_line(exc)}", file=sys.stderr, flush=True)
            return 2
        except Exception as exc:                 # an internal failure: a bug
            name = prog or _CURRENT.get("prog") or f"python -m {main.__module__}"
            command = sys.argv[1:] if argv is None else list(argv)
            what = _one_line(f"{type(exc).__name__}: {exc}" if str(exc) else
                             type(exc).__name__)
            sys.stdout.flush()
            print(f"{name}: internal error with {_one_line(_describe(command))}: {what} "
                  f"-- this is a bug; please report it with this line", file=sys.stderr,
                  flush=True)
            return INTERNAL_ERROR
        finally:
            _CURRENT.clear()
            _CURRENT.update(outer)
    return run


def legal_space():
    """Help text: the legal parameter space (contract section 1, from
    ``contract/facts.py``) and the combinations the IP refuses, with reasons;
    paragraphs separated by a blank line."""

    def span(rng):
        return f"{rng.start}..{rng.stop - 1}"

    refused = facts.REFUSED_COMBINATIONS
    return "\n\n".join([
        "Legal parameter space (contract section 1): "
        f"LINE_BITS {', '.join(map(str, facts.LINE_BITS_CHOICES))}; "
        f"WORKERS {', '.join(map(str, facts.WORKERS_CHOICES))}; "
        f"STAGES {span(facts.STAGES_RANGE)}; REGIONS {span(facts.REGIONS_RANGE)}; "
        f"MAX_OUTSTANDING {span(facts.MAX_OUTSTANDING_RANGE)}; "
        f"profile {', '.join(sorted(facts.PROFILES))}; E = LINE_BITS / WORKERS lanes a line.",
        ("Refused combinations: " + "; ".join(f"{what}: {why}" for what, why in refused) + "."
         if refused else "Refused combinations: none; every combination of these values "
                         "is built."),
        *facts.COMBINATION_NOTES,
    ])
