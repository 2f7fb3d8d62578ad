"""Errors that trtbench reports to the user instead of a stack trace."""


class UserInputError(Exception):
    """Bad input the CLI prints, exiting 2: ``where`` names the config key path or file, ``hint`` the fix."""

    exit_code = 2

    def __init__(self, where: str, problem: str, hint: str = ""):
        self.where, self.problem, self.hint = where, problem, hint
        super().__init__(self.format())

    def format(self) -> str:
        text = f"{self.where}: {self.problem}"
        if self.hint:
            text += f"\n  fix: {self.hint}"
        return text


class Unavailable(Exception):
    """A build that finds it cannot run here: the variant is skipped with ``reason``, never failed."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


OUTPUT_FIX = "free some space there, or choose another --output"  # a full disk's fix where the output folder is


class DiskFullError(Exception):
    """A write that does not fit on its disk (a fault, exit 1): names the folder, bytes needed, bytes free, the fix."""

    def __init__(self, folder, needed: int, free: int, what: str, fix: str = OUTPUT_FIX):
        self.folder, self.needed, self.free = folder, needed, free
        super().__init__(f"not enough space in {folder}: {what} needs {needed:,} bytes, {free:,} bytes are free "
                         f"({fix})")
