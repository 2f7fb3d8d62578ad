"""Build time: seconds from the eager model to the built variant (CSV only)."""

from trtbench.report.columns.registry import ColumnSet, register

BUILD_TIME = register(ColumnSet("build_time", columns=(), fields=("build_s",),
                                values=lambda row: {"build_s": row.record.build.get("build_s")}))
