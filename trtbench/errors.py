"""Errors that trtbench reports to the user instead of a stack trace."""


class UserInputError(Exception):
    """Bad input (config, file, flag): the CLI prints it and exits with code 2.

    ``where`` names the offending config key path (``benchmark.iterations``) or file,
    and ``hint`` says how to fix it.
    """

    exit_code = 2

    def __init__(self, where: str, problem: str, hint: str = ""):
        self.where = where
        self.problem = problem
        self.hint = hint
        super().__init__(self.format())

    def format(self) -> str:
        text = f"{self.where}: {self.problem}"
        if self.hint:
            text += f"\n  fix: {self.hint}"
        return text
