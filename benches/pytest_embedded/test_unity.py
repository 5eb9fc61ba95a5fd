# The reference fwfix's figures compare against: one Unity test image under pytest-embedded's QEMU
# service, passing when the summary reports no failure and the final OK follows.


def test_unity_image(dut):
    dut.expect(r"\d+ Tests 0 Failures \d+ Ignored", timeout=5)
    dut.expect_exact("OK", timeout=5)
