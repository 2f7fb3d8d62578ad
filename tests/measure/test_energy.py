"""Energy per inference: RAPL's package counters on a CPU, NVML's energy counter on a GPU, read around each
timed block, less the idle draw read before the point's rounds.

Neither counter exists on this machine (a VM without /sys/class/powercap, no GPU), so both are faked and say
so: RAPL by a sysfs tree in a temporary folder (the files and units of the kernel's powercap interface:
Documentation/power/powercap/powercap.rst, ``energy_uj`` wrapping at ``max_energy_range_uj``), NVML by
:class:`FakeNvml`, a fake of the few ``pynvml`` functions trtbench calls, with their signatures, units and
errors as nvidia-ml-py 13.615.71's ``pynvml.py`` defines them.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
import types

import pytest
import torch

from conftest import run_dict
from trtbench.core.case import Case
from trtbench.core.record import Record
from trtbench.core.status import Status
from trtbench.measure import energy
from trtbench.measure.energy import EnergyReading, NoCounter, RaplCounter, energy_counter
from trtbench.measure.timing import time_calls
from trtbench.measure.trackers.energy import EnergyTracker, PointEnergy, energy_metrics
from trtbench.report.tables import csv_text, markdown_table
from trtbench.results.resultset import ResultSet


def write_zone(root, name: str, uj: int, wrap: int = 2 ** 32) -> None:
    zone = root / name
    zone.mkdir(exist_ok=True)
    (zone / "energy_uj").write_text(f"{uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{wrap}\n")


def test_rapl_sums_packages_unwraps_and_leaves_sub_zones_out(tmp_path):
    write_zone(tmp_path, "intel-rapl:0", 1_000_000, wrap=10_000_000)
    write_zone(tmp_path, "intel-rapl:0:0", 500_000)  # core: part of package 0, not added to it
    write_zone(tmp_path, "intel-rapl:1", 2_000_000)
    counter = energy_counter(torch.device("cpu"), tmp_path)
    assert counter.source == "rapl" and counter.joules() == 0.0
    write_zone(tmp_path, "intel-rapl:0", 9_500_000, wrap=10_000_000)
    write_zone(tmp_path, "intel-rapl:0:0", 9_000_000)
    write_zone(tmp_path, "intel-rapl:1", 2_250_000)
    assert counter.joules() == pytest.approx(8.75)
    write_zone(tmp_path, "intel-rapl:0", 500_000, wrap=10_000_000)  # wrapped past max_energy_range_uj
    assert counter.joules() == pytest.approx(9.75)


def test_no_readable_rapl_counter_says_why(tmp_path):
    with pytest.raises(NoCounter, match="no RAPL counter under"):
        RaplCounter(tmp_path)
    (tmp_path / "intel-rapl:0").mkdir()
    (tmp_path / "intel-rapl:0" / "energy_uj").mkdir()  # unreadable as a file (root reads a chmod 000 file)
    (tmp_path / "intel-rapl:0" / "max_energy_range_uj").write_text("100\n")
    with pytest.raises(NoCounter, match="cannot be read here"):
        RaplCounter(tmp_path)


class FakeNvml(types.ModuleType):
    """A fake of ``pynvml`` (nvidia-ml-py 13.615.71): ``nvmlInit()``; ``nvmlDeviceGetHandleByUUID(uuid)`` (a
    ``GPU-`` UUID string) and ``nvmlDeviceGetHandleByIndex(index)``, each a handle, ``NVMLError`` before
    ``nvmlInit`` (NVML_ERROR_UNINITIALIZED) or for an unknown device (NVML_ERROR_NOT_FOUND);
    ``nvmlDeviceGetTotalEnergyConsumption(handle)``: an int of millijoules since the driver loaded;
    ``nvmlDeviceGetClockInfo(handle, type)`` (NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2) in MHz;
    ``nvmlDeviceGetTemperature(handle, sensor)`` (NVML_TEMPERATURE_GPU = 0) in degrees C. Its GPU draws
    ``idle_w`` all the time plus ``joules_per_call`` per :meth:`call`."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    class NVMLError(Exception):
        pass

    def __init__(self, uuid: str, idle_w: float = 60.0, joules_per_call: float = 2.0):
        super().__init__("pynvml")
        self.uuid, self.idle_w, self.joules_per_call = uuid, idle_w, joules_per_call
        self.started, self.calls, self.initialised, self.clock = time.perf_counter(), 0, False, 1980

    def call(self) -> None:
        self.calls += 1
        self.clock = 1755  # clocks down under load

    def nvmlInit(self) -> None:
        self.initialised = True

    def _handle(self):
        if not self.initialised:
            raise self.NVMLError("Uninitialized")
        return ("handle", self.uuid)

    def nvmlDeviceGetHandleByUUID(self, uuid: str):
        if not isinstance(uuid, str) or uuid != f"GPU-{self.uuid}":
            raise self.NVMLError("Not Found")
        return self._handle()

    def nvmlDeviceGetHandleByIndex(self, index: int):
        raise AssertionError("trtbench names the GPU by UUID where NVML finds it: NVML's indices need not be CUDA's")

    def _check(self, handle) -> None:
        if handle != self._handle():
            raise self.NVMLError("Invalid Argument")

    def nvmlDeviceGetTotalEnergyConsumption(self, handle) -> int:
        self._check(handle)
        return int((self.idle_w * (time.perf_counter() - self.started) + self.joules_per_call * self.calls) * 1e3)

    def nvmlDeviceGetClockInfo(self, handle, type: int) -> int:
        self._check(handle)
        return {self.NVML_CLOCK_SM: self.clock, self.NVML_CLOCK_MEM: 2619}[type]

    def nvmlDeviceGetTemperature(self, handle, sensor: int) -> int:
        self._check(handle)
        assert sensor == self.NVML_TEMPERATURE_GPU
        return 40 + min(self.calls, 25)


@pytest.fixture
def fake_nvml(monkeypatch):
    nvml = FakeNvml("5f1c0ffe-0000-4000-8000-000000000001")
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: types.SimpleNamespace(uuid=nvml.uuid))
    return nvml


def test_nvml_energy_per_call_is_above_the_idle_draw_with_clocks_and_temperature(fake_nvml):
    # time_calls's CPU branch times the calls (its CUDA branch needs CUDA); the meter is the fake GPU's counter
    point = PointEnergy.before_rounds(torch.device("cuda"))
    assert point.counter.source == "nvml" and point.idle_w == pytest.approx(60.0, rel=0.02)
    assert point.start == {"sm_clock_mhz": 1980, "memory_clock_mhz": 2619, "temperature_c": 40}

    def call():
        fake_nvml.call()
        time.sleep(0.002)

    blocks = [time_calls(call, torch.device("cpu"), 5, trackers=[EnergyTracker(point.counter)]) for _ in range(6)]
    energies = [b.tracked["energy"] for b in blocks]
    assert all(e.joules >= 10.0 and (e.seconds, e.units) >= (0.01, 5) for e in energies)
    metrics = point.after_rounds().metrics([b.tracked["energy"] for b in blocks])
    assert metrics["joules_per_call"] == pytest.approx(2.0, abs=0.05)
    low, high = metrics["joules_per_call_ci"]
    assert low <= metrics["joules_per_call"] <= high
    assert metrics["average_power_w"] > 60.0 and metrics["blocks"] == 6
    assert metrics["state_end"] == {"sm_clock_mhz": 1755, "memory_clock_mhz": 2619, "temperature_c": 65}


def test_no_pynvml_or_no_counter_says_why(monkeypatch, fake_nvml):
    monkeypatch.setattr(fake_nvml, "nvmlDeviceGetTotalEnergyConsumption",
                        lambda handle: (_ for _ in ()).throw(fake_nvml.NVMLError("Not Supported")))
    with pytest.raises(NoCounter, match="NVML's energy counter is not readable here: Not Supported"):
        energy_counter(torch.device("cuda"))
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert PointEnergy.before_rounds(torch.device("cuda")).metrics([]) == {
        "unavailable": "pynvml is not installed (pip install nvidia-ml-py, or trtbench's energy extra)"}


def test_energy_metrics_subtract_the_idle_draw_per_call():
    metrics = energy_metrics([EnergyReading(12.0, 0.1, 5), EnergyReading(13.0, 0.1, 5), EnergyReading(12.5, 0.1, 5)],
                             idle_w=20.0)
    assert metrics["joules_per_call"] == pytest.approx((12.5 - 2.0) / 5)
    assert metrics["average_power_w"] == pytest.approx(125.0) and metrics["idle_power_w"] == 20.0
    assert energy_metrics([], 20.0) is None


def _results(energies: list[dict]) -> ResultSet:
    results = ResultSet()
    for variant, metrics in zip(("eager", "compiled"), energies):
        case = Case("m", variant, "fp16", "b2", ((2, 3),), 1, "cuda")
        results.add(Record(case, "env", rounds=[[4.0, 4.1, 3.9]], metrics={"energy": metrics}))
    return results


def test_the_report_and_csv_carry_energy_or_say_why_it_is_absent():
    measured = {"source": "nvml", "joules_per_call": 0.512, "joules_per_call_ci": [0.5, 0.52],
                "average_power_w": 310.4, "idle_power_w": 70.0, "blocks": 9,
                "state_start": {"sm_clock_mhz": 1980, "temperature_c": 41},
                "state_end": {"sm_clock_mhz": 1755, "temperature_c": 63}}
    table = markdown_table(_results([measured, {**measured, "joules_per_call": 0.3, "joules_per_call_ci": None}]))
    assert "| J/inference (95% CI) | avg W |" in table and "| 0.512 [0.5-0.52] | 310 |" in table
    assert "J/inference: the device's energy counter (nvml)" in table
    assert "device state over the rounds at m fp16 b2: SM 1980->1755 MHz, 41->63 C." in table
    assert "energy_j_per_inference" in csv_text(_results([measured])).splitlines()[0]
    absent = markdown_table(_results([{"unavailable": "no RAPL counter under /sys/class/powercap (...)"}] * 2))
    assert "J/inference" not in absent
    assert absent.count("energy not measured: no RAPL counter under /sys/class/powercap (...).") == 1


def test_a_run_without_a_counter_reports_why(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setattr(energy, "POWERCAP", tmp_path / "powercap")  # no RAPL zone, as on this VM
    tiny_config["benchmark"]["shapes"] = ["opt"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    for record in outcome.results:
        assert record.metrics["energy"] == {"unavailable": f"no RAPL counter under {tmp_path / 'powercap'} (this "
                                                           "kernel or VM exposes no intel-rapl zone)"}
    assert "energy not measured: no RAPL counter" in (tmp_path / "out" / "report.md").read_text()


def test_a_generate_request_reads_the_counter_around_it_and_reports_joules_per_token(fake_nvml):
    from trtbench.scenarios.generate.report import energy_lines
    from trtbench.scenarios.generate.result import GenerateRecord
    from trtbench.workers.checked_call import checked_call

    point = PointEnergy.before_rounds(torch.device("cuda"))
    requests = []
    for _ in range(5):  # a request of batch 2 x 4 new tokens: its GPU spends 2 J per token
        checked = checked_call(lambda: [fake_nvml.call() for _ in range(8)], torch.device("cpu"), point.counter)
        requests.append(dataclasses.replace(checked.energy, units=2 * 4))
    energy = point.metrics(requests, unit="token")
    assert energy["joules_per_token"] == pytest.approx(2.0, abs=0.05) and energy["source"] == "nvml"
    data = {"metrics": {"tpot_ms": {"median": 1.0}}, "energy": energy}
    part = GenerateRecord("env", "llama", 1, "p8-n4-b2", "eager", "eager", "fp16", Status.OK, "", data)
    (line,) = [line for line in energy_lines([part]) if line.startswith("- p8-n4-b2 eager")]
    assert re.match(r"- p8-n4-b2 eager: 2(\.0\d*)? J/token \[[\d.]+-[\d.]+\], \d+ W \(nvml; idle 60 W\)", line)


def test_the_interleaved_rounds_keep_each_blocks_energy(tmp_path, monkeypatch):
    # a fake RAPL package whose counter only the calls move: 1 J per call, none while idle
    from trtbench.measure.race import Entrants
    from trtbench.measure.timing import TimingSettings, measure_interleaved

    write_zone(tmp_path, "intel-rapl:0", 0)
    monkeypatch.setattr(energy, "POWERCAP", tmp_path)
    used = [0]

    def call():
        used[0] += 1_000_000
        (tmp_path / "intel-rapl:0" / "energy_uj").write_text(f"{used[0]}\n")

    point = PointEnergy.before_rounds(torch.device("cpu"))
    assert point.idle_w == 0.0 and point.counter.source == "rapl"
    timing = TimingSettings(mode="fixed", warmup=1, warmup_s=0, iterations=6)
    measured = measure_interleaved({"eager": call, "traced": call}, torch.device("cpu"), timing,
                                   entrants=Entrants(baseline="eager"))
    for raw in measured.values():
        assert [energy.units for energy in raw.kept("energy")] == [len(r) for r in raw.rounds]
        assert point.metrics(raw.kept("energy"))["joules_per_call"] == pytest.approx(1.0)
