"""bench/kernel_times.py's reading of Nsight Compute's CSV (no GPU): the
launches between the markers, in order, with their names cut short."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import kernel_times as kt  # noqa: E402

HEAD = ('"ID","Process ID","Kernel Name","Grid Size","Block Size","dram__bytes_read.sum",'
        '"dram__bytes_write.sum","gpu__time_duration.sum","sm__cycles_active.avg","sm__cycles_active.max"\n'
        '"","","","","","byte","byte","nsecond","cycle","cycle"\n')


def row(i, name, t_ns, rd=0, avg=100, mx=100):
    return f'"{i}","1","{name}","(1, 1, 1)","(256, 1, 1)","{rd:,}","0","{t_ns:,}","{avg}","{mx}"\n'


FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<{}>, std::array<char *, 1>>(int, T2)"
START_FILL, END_FILL = FILL.format("c10::complex<double>"), FILL.format("c10::complex<float>")
PASS = "void kgen::device::topk::multi_pass_kernel<__half, 256, 11, 1, 0>(const T1 *, kgen::device::topk::MultiArgs)"


def test_names_lose_namespaces_and_arguments():
    assert kt.short_name(PASS) == "multi_pass_kernel<__half, 256, 11, 1, 0>"
    assert kt.short_name("gatherTopK(float *, int)") == "gatherTopK"


def test_launches_between_markers_form_segments_in_order():
    text = ("==PROF== Connected\n" + HEAD +
            row(0, "void prepare_input<float>(float *)", 1000) +  # before any marker: not listed
            row(1, START_FILL, 900) +
            row(2, PASS, 73_100, rd=31_900_000, avg=77_000, mx=140_000) +
            row(3, PASS, 8_300) + row(4, END_FILL, 900) +
            "## app output between launches\n" +
            row(5, "void warm_up(int)", 500) +  # between an end and the next start: not listed
            row(6, START_FILL, 900) + row(7, "void gatherTopK<c10::Half, unsigned int, 2>(int)", 50_800) +
            row(8, END_FILL, 900))
    segs = kt.segments(text)
    assert [len(s) for s in segs] == [2, 1]
    first = segs[0][0]
    assert first["name"] == "multi_pass_kernel<__half, 256, 11, 1, 0>"
    assert first["gpu__time_duration.sum"] == 73_100 and first["dram__bytes_read.sum"] == 31_900_000
    assert segs[1][0]["name"] == "gatherTopK<c10::Half, unsigned int, 2>"


def test_plain_fills_are_not_markers():
    plain = FILL.format("double")  # torch.zeros of float64: not a marker
    text = (HEAD + row(0, plain, 900) + row(1, FILL.format("short"), 900) +
            row(2, START_FILL, 900) + row(3, PASS, 8_300) + row(4, END_FILL, 900))
    assert [len(s) for s in kt.segments(text)] == [1]


def test_report_totals_each_call_and_shows_the_busiest_sm():
    segs = [[{"name": "a", "grid": "(1, 2, 1)", "gpu__time_duration.sum": 2000.0,
              "sm__cycles_active.avg": 50.0, "sm__cycles_active.max": 90.0}], []]
    text = kt.report(["topk topk 1x8 k=2 f32"], ["topk_tourney_f32_i8_p1"], segs)
    lines = text.splitlines()
    assert lines[0] == "kgen topk topk 1x8 k=2 f32  topk_tourney_f32_i8_p1"
    assert "2.0 us" in lines[1] and "1.80" in lines[1]
    assert "(1 launches)" in lines[2] and lines[3] == "torch topk topk 1x8 k=2 f32"
    assert "(0 launches)" in lines[4]


def test_output_without_a_header_is_refused():
    with pytest.raises(ValueError):
        kt.segments("no profile here\n")


def test_issue_columns_are_read_and_shown_only_when_measured():
    head = HEAD.replace('"sm__cycles_active.max"\n', '"sm__cycles_active.max","sm__inst_executed.sum",'
                        '"sm__inst_executed.avg.per_cycle_active","sm__warps_active.avg.pct_of_peak_sustained_active"\n')
    head = head.replace('"cycle","cycle"\n', '"cycle","cycle","inst","inst/cycle","%"\n')
    def more(line, extra='"","",""'):
        return line.rstrip("\n") + "," + extra + "\n"
    text = (head + more(row(0, START_FILL, 900)) + more(row(1, PASS, 8_300), '"390,000","1.89","47.7"') +
            more(row(2, END_FILL, 900)))
    launch = kt.segments(text)[0][0]
    assert launch["sm__inst_executed.sum"] == 390_000 and launch["sm__inst_executed.avg.per_cycle_active"] == 1.89
    shown = kt.report(["topk topk 1x8 k=2 f32"], ["v"], [[launch], []]).splitlines()[1]
    assert "inst    0.39 M" in shown and "ipc 1.89" in shown and "warps  47.7%" in shown
    plain = {k: v for k, v in launch.items() if not k.startswith("sm__inst") and not k.startswith("sm__warps")}
    assert "ipc" not in kt.report(["topk topk 1x8 k=2 f32"], ["v"], [[plain], []])
