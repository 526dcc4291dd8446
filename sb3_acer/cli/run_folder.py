"""The run-folder policy that ``sb3-acer train`` and ``run_atari`` share: where a path names a folder, that
a path can be created before anything is trained, the lock a run holds on the folder it writes in, and an
earlier run's files, which are only replaced with ``--overwrite``: set aside (renamed to a hidden
``.<name>.previous``) until the new run has something to keep, and put back if it has not. A model that
cannot be saved where it should (a full disk) is saved elsewhere rather than lost."""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence

from sb3_acer.cli.errors import CLIError, UsageError, one_line

__all__ = [
    "LOCK_NAME",
    "RunFiles",
    "check_can_create",
    "check_nothing_set_aside",
    "check_replaceable",
    "in_folder",
    "make_folders",
    "model_file",
    "put_back",
    "remove_folders",
    "run_lock",
    "save_elsewhere",
    "set_aside",
    "set_aside_files",
    "set_aside_name",
    "sidecar",
]

#: Held (``fcntl.flock``) in the run folder while a run writes there.
LOCK_NAME = ".sb3-acer-train.lock"
#: The suffix of an earlier run's file set aside by ``--overwrite`` (``.<name>.previous``).
SET_ASIDE_SUFFIX = ".previous"


def sidecar(model_path: pathlib.Path, suffix: str) -> pathlib.Path:
    """The file ``train`` writes beside a model: ``model.json``, ``model.vecnormalize.npz``."""
    return model_path.with_suffix(suffix)


def model_file(path: str | pathlib.Path) -> pathlib.Path:
    """The file ``ACER.save(path)`` writes (``.zip`` is appended to a path without suffix)."""
    path = pathlib.Path(path)
    return path if path.suffix else path.with_suffix(".zip")


def in_folder(path: str, name: str) -> str:
    """``path``, or ``path/name`` where ``path`` names a folder: it ends in a separator, or is a folder
    without suffix (a folder ``saved.zip`` is a mistake, reported as one)."""
    names_folder = path.endswith(("/", os.sep)) or (
        pathlib.Path(path).is_dir() and not pathlib.Path(path).suffix
    )
    return str(pathlib.Path(path) / name) if names_folder else path


def check_can_create(path: pathlib.Path, what: str, *, folder: bool) -> None:
    """Raise :class:`UsageError` if ``path`` cannot become a folder (``folder``) or a file written there:
    checked before anything is trained or written, so a mistyped path costs nothing.

    Files are written beside their target and renamed over it, so a file's folder must be writable.
    """
    try:
        _check_path(path, what, folder=folder)
    except OSError as error:  # e.g. a name longer than the file system allows
        raise UsageError(f"{what} {path}: {error.strerror or one_line(error)}") from None


def _check_path(path: pathlib.Path, what: str, *, folder: bool) -> None:
    if path.exists() and path.is_dir() != folder:
        raise UsageError(
            f"{what} {path} is a {'file' if folder else 'folder'}, not a {'folder' if folder else 'file'}"
        )
    for candidate in [path, *path.parents]:
        if candidate.is_symlink() and not candidate.exists():
            raise UsageError(f"{what} {path} cannot be created: {candidate} is a broken symbolic link")
        if candidate.exists() and (candidate != path or folder):
            if not candidate.is_dir():
                raise UsageError(f"{what} {path} cannot be created: {candidate} is a file")
            if not os.access(candidate, os.W_OK | os.X_OK):
                raise UsageError(f"{what} {path} cannot be written: no write permission in {candidate}")
            try:  # the permission bits can say yes where no file can be made (a read-only or special mount)
                descriptor, probe = tempfile.mkstemp(prefix=".sb3-acer-probe-", dir=candidate)
            except OSError as error:
                raise UsageError(
                    f"{what} {path} cannot be written: {candidate} refuses new files "
                    f"({error.strerror or one_line(error)})"
                ) from None
            os.close(descriptor)
            os.unlink(probe)
            # A file is written as the hidden ".<name>.XXXXXXXX.tmp" first (an atomic save).
            name_max = os.pathconf(candidate, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
            if not folder and len(f".{path.name}.XXXXXXXX.tmp") > name_max:
                raise UsageError(f"{what} {path}: the file name is too long to be saved safely; shorten it")
            return


def make_folders(path: pathlib.Path) -> list[pathlib.Path]:
    """``mkdir -p path``; returns the folders it created, deepest first."""
    created = [folder for folder in [path, *path.parents] if not folder.exists()]
    path.mkdir(parents=True, exist_ok=True)
    return created


def remove_folders(folders: Sequence[pathlib.Path]) -> None:
    """Remove each of ``folders`` that is empty, deepest first: those a run made and did not use."""
    for folder in sorted(folders, key=lambda folder: len(folder.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


def check_replaceable(paths: Sequence[pathlib.Path]) -> None:
    """Raise :class:`UsageError` unless each of an earlier run's ``paths`` is a file that can be moved, so
    that none is set aside (:func:`set_aside`) unless all can be."""
    for path in paths:
        if not path.is_file():
            raise UsageError(f"{path} is in the way of this run's files and is not a file; move it away")
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise UsageError(f"cannot replace {path}: no write permission in {path.parent}")


def set_aside_name(path: pathlib.Path) -> pathlib.Path:
    """Where :func:`set_aside` puts ``path``: the hidden ``.<name>.previous`` beside it."""
    return path.with_name(f".{path.name}{SET_ASIDE_SUFFIX}")


def set_aside(paths: Sequence[pathlib.Path]) -> list[tuple[pathlib.Path, pathlib.Path]]:
    """``--overwrite``: rename each of an earlier run's ``paths`` to a hidden ``.<name>.previous`` beside it
    until the new run has something to keep; returns the (path, set-aside path) pairs. If one cannot be
    moved, those already moved are put back and :class:`CLIError` says why."""
    aside: list[tuple[pathlib.Path, pathlib.Path]] = []
    try:
        for path in paths:
            moved = set_aside_name(path)
            if moved.exists() or moved.is_symlink():  # an earlier run's file: a rename would replace it
                raise FileExistsError(
                    errno.EEXIST, "an earlier run's set-aside file is in the way", str(moved)
                )
            path.rename(moved)
            aside.append((path, moved))
    except OSError as error:
        put_back(aside)
        raise CLIError(f"cannot prepare the run: {one_line(error)}") from None
    return aside


def put_back(aside: Sequence[tuple[pathlib.Path, pathlib.Path]]) -> None:
    """Rename each set-aside file (:func:`set_aside`'s pairs) back to its name; one that went away cannot
    come back."""
    for path, moved in aside:
        with contextlib.suppress(FileNotFoundError):
            moved.rename(path)


def set_aside_files(folder: pathlib.Path, pattern: str) -> list[pathlib.Path]:
    """The files matching ``pattern`` in ``folder`` that a run set aside and never put back (it was killed):
    the earlier run's, in the way of the next one."""
    return sorted(folder.glob(f".{pattern}{SET_ASIDE_SUFFIX}"))


def check_nothing_set_aside(stale: Sequence[pathlib.Path]) -> None:
    """Raise :class:`UsageError` naming the first of ``stale``, an earlier run's files that a run set aside
    (:func:`set_aside`) and never put back because it was killed: the next run would take their place, or
    set its own aside over them, and the earlier run's file would be lost."""
    for path in stale:
        original = path.with_name(path.name[1 : -len(SET_ASIDE_SUFFIX)])
        raise UsageError(
            f"{path} is an earlier run's file, set aside by a run that was stopped before it could put it "
            f"back; rename it to {original} (over that run's own file, if there is one), or remove it"
        )


class RunFiles:
    """What a run changes where it writes, undone by :meth:`abandon` if it trains nothing: the earlier run's
    ``earlier`` files, set aside (:func:`set_aside`, which raises :class:`CLIError` if one cannot be moved)
    until :meth:`keep`; the folders it made (:meth:`make_folders`); the log folders it opened (``logs``);
    and its own files, the ``places`` (folder, glob pattern) where it writes."""

    def __init__(self, places: Sequence[tuple[pathlib.Path, str]], earlier: Sequence[pathlib.Path]) -> None:
        self.places = list(places)
        self.aside = set_aside(earlier)
        self.made: list[pathlib.Path] = []
        self.logs: list[pathlib.Path] = []
        self.settled = False

    def make_folders(self, folder: pathlib.Path) -> None:
        """``mkdir -p folder``, remembering the folders made."""
        self.made += make_folders(folder)

    def keep(self) -> None:
        """The run has something to save: its files stay, whatever happens next, and the earlier run's
        set-aside files go (one that went away, or cannot go, is left to the next run to name)."""
        self.settled = True
        for _, moved in self.aside:
            with contextlib.suppress(OSError):
                moved.unlink()

    def abandon(self) -> None:
        """Keep nothing of a run that trained nothing (an empty run would block the corrected command) and
        put the earlier run's files back: every file where the run writes is its own, as the earlier run's
        were set aside (or stopped the run). Does nothing once the run's files are kept or abandoned."""
        if self.settled:
            return
        self.settled = True
        for path in dict.fromkeys(path for folder, pattern in self.places for path in folder.glob(pattern)):
            path.unlink()
        put_back(self.aside)
        for folder in self.logs:  # closed by now
            shutil.rmtree(folder, ignore_errors=True)
        remove_folders(self.made)


@contextlib.contextmanager
def run_lock(run_dir: pathlib.Path, busy: str) -> Iterator[None]:
    """Hold an exclusive lock on the run folder while the run writes there, so that a second run into the
    same folder (same env and seed, e.g. a shell loop that forgot ``--seed``) stops with one line, ``busy``,
    rather than mixing its logs and model with the first one's. Made if missing (and removed again if the
    run leaves it empty); the lock is released and removed when the run ends, and released by the system if
    the process dies. Without ``fcntl`` (Windows) runs are not locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    path = run_dir / LOCK_NAME
    try:
        created = make_folders(run_dir)
    except OSError as error:
        raise CLIError(f"cannot prepare the run: {one_line(error)}") from None
    lock = None
    try:
        # A run ending removes the file: one that opened it just before may lock the removed file, so the
        # lock counts only if the locked file is still the one the path names; otherwise open it again.
        for _ in range(100):
            try:
                lock = open(path, "a")  # noqa: SIM115 - held for the whole run
            except OSError as error:
                raise CLIError(f"cannot prepare the run: {one_line(error)}") from None
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise CLIError(busy) from None
            with contextlib.suppress(FileNotFoundError):
                if os.path.samestat(os.fstat(lock.fileno()), os.stat(path)):
                    break
            lock.close()
        else:  # pragma: no cover - the file replaced a hundred times in a row
            raise CLIError(f"cannot lock the run folder {run_dir}: its lock file keeps being replaced")
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                (run_dir / LOCK_NAME).unlink()
    finally:
        if lock is not None:
            lock.close()
        remove_folders(created)  # a run that did not start leaves no empty folder behind


def save_elsewhere(
    save: Callable[[pathlib.Path], object],
    target: pathlib.Path,
    name: str,
    folders: Sequence[pathlib.Path] = (),
) -> pathlib.Path | None:
    """Save a model that could not be saved at ``target`` (the disk filled up, the folder went away) as
    ``<folder>/<name>``: in each of ``folders`` (but at ``target`` itself), then in a new temporary folder.

    Returns:
        Where ``save`` succeeded, or ``None`` where it failed everywhere.
    """
    for folder in (*[lambda folder=folder: folder for folder in folders], _temporary_folder):
        try:
            rescue = folder() / name
            if rescue.resolve() == target.resolve():
                continue
            save(rescue)
        except OSError:
            continue
        return rescue
    return None


def _temporary_folder() -> pathlib.Path:
    return pathlib.Path(tempfile.mkdtemp(prefix="sb3-acer-"))
