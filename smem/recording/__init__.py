"""Recordings: a machine's memory over time, as a directory of frames with an index.

``smem record`` writes one (smem.recording.record: this machine on a schedule, or captures a
target pushes over TCP); smem.recording.frames says what a frame holds and why it is small;
smem.recording.store writes the directory so that a kill leaves every earlier frame readable.
Reading one back is a source like a capture: smem.sources.recorded.
"""
