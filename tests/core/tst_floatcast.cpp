// SPDX-License-Identifier: MIT
// core/write/floatcast: the bits --dtype writes, pinned where torch's conversion is easy to get
// wrong (ties, subnormals, overflow, NaN, float64 rounding twice). The values were read from torch
// 2.14's `.to()` on x86 (tests/cli/tst_dtypecast.cpp compares whole fixtures with both torches).
#include "core/write/floatcast.h"

#include <QTest>

#include <cstring>
#include <vector>

using namespace ckpt;

class TestFloatCast : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void float32ToBfloat16()
    {
        QCOMPARE(float32ToBfloat16Bits(0x3f800000U), std::uint16_t(0x3f80)); // 1
        QCOMPARE(float32ToBfloat16Bits(0x3f808000U), std::uint16_t(0x3f80)); // tie, even below
        QCOMPARE(float32ToBfloat16Bits(0x3f818000U), std::uint16_t(0x3f82)); // tie, even above
        QCOMPARE(float32ToBfloat16Bits(0x3f808001U), std::uint16_t(0x3f81)); // above the tie
        QCOMPARE(float32ToBfloat16Bits(0x7f7f8000U), std::uint16_t(0x7f80)); // to infinity
        QCOMPARE(float32ToBfloat16Bits(0x7f7f7fffU), std::uint16_t(0x7f7f));
        QCOMPARE(float32ToBfloat16Bits(0x00018000U), std::uint16_t(0x0002)); // subnormal tie
        QCOMPARE(float32ToBfloat16Bits(0xff800000U), std::uint16_t(0xff80)); // -inf
        QCOMPARE(float32ToBfloat16Bits(0x7fc00000U), std::uint16_t(0xffff)); // NaN: ATen's vector path
        QCOMPARE(float32ToBfloat16Bits(0xffa00123U), std::uint16_t(0xffff));
    }

    void float32ToFloat16()
    {
        QCOMPARE(float32ToFloat16Bits(0x477fe000U), std::uint16_t(0x7bff)); // 65504
        QCOMPARE(float32ToFloat16Bits(0x477fefffU), std::uint16_t(0x7bff));
        QCOMPARE(float32ToFloat16Bits(0x477ff000U), std::uint16_t(0x7c00)); // 65520: infinity
        QCOMPARE(float32ToFloat16Bits(0xc7c35000U), std::uint16_t(0xfc00)); // -100000
        QCOMPARE(float32ToFloat16Bits(0x33800000U), std::uint16_t(0x0001)); // 2^-24
        QCOMPARE(float32ToFloat16Bits(0x33000000U), std::uint16_t(0x0000)); // 2^-25: tie to zero
        QCOMPARE(float32ToFloat16Bits(0x33000001U), std::uint16_t(0x0001));
        QCOMPARE(float32ToFloat16Bits(0x33c00000U), std::uint16_t(0x0002)); // 1.5 x 2^-24: tie to 2
        QCOMPARE(float32ToFloat16Bits(0x387fffffU), std::uint16_t(0x0400)); // up to the least normal
        QCOMPARE(float32ToFloat16Bits(0x3f801000U), std::uint16_t(0x3c00)); // tie, even below
        QCOMPARE(float32ToFloat16Bits(0x3f803000U), std::uint16_t(0x3c02)); // tie, even above
        QCOMPARE(float32ToFloat16Bits(0x80000001U), std::uint16_t(0x8000)); // -0
        // NaN: quiet, sign and the payload's top ten bits (F16C, as torch 2.14 writes it)
        QCOMPARE(float32ToFloat16Bits(0x7f800001U), std::uint16_t(0x7e00));
        QCOMPARE(float32ToFloat16Bits(0xffa00123U), std::uint16_t(0xff00));
        QCOMPARE(float32ToFloat16Bits(0x7fc12345U), std::uint16_t(0x7e09));
    }

    void widening()
    {
        QCOMPARE(float16ToFloat32Bits(0x0001), std::uint32_t(0x33800000U)); // least subnormal
        QCOMPARE(float16ToFloat32Bits(0x83ff), std::uint32_t(0xb87fc000U)); // largest subnormal, negative
        QCOMPARE(float16ToFloat32Bits(0x7c00), std::uint32_t(0x7f800000U));
        QCOMPARE(float16ToFloat32Bits(0x7c01), std::uint32_t(0x7fc02000U)); // NaN made quiet
        QCOMPARE(float16ToFloat32Bits(0xfd23), std::uint32_t(0xffe46000U));
        for (std::uint32_t h = 0; h < 0x10000; ++h) { // every non-NaN float16 round-trips
            const auto half = static_cast<std::uint16_t>(h);
            if ((half & 0x7fff) > 0x7c00)
                continue;
            QCOMPARE(float32ToFloat16Bits(float16ToFloat32Bits(half)), half);
        }
    }

    void float64()
    {
        QCOMPARE(float64ToFloat32Bits(0x7ff4000012345678ULL), std::uint32_t(0x7fe00000U));
        QCOMPARE(float64ToFloat32Bits(0xfff8000000000123ULL), std::uint32_t(0xffc00000U));
        QCOMPARE(float64ToFloat32Bits(0x47efffffefffffffULL), std::uint32_t(0x7f7fffffU));
        QCOMPARE(float64ToFloat32Bits(0x47effffff0000000ULL), std::uint32_t(0x7f800000U)); // to infinity
        QCOMPARE(float64ToFloat32Bits(0x36a0000000000000ULL), std::uint32_t(0x00000001U)); // 2^-149
        QCOMPARE(float64ToFloat32Bits(0x3690000000000000ULL), std::uint32_t(0x00000000U)); // 2^-150: tie
        // 1 + 2^-8 + 2^-40 rounds to float32 1 + 2^-8 first, then (a tie) to bfloat16 1.0, as in
        // torch; rounding once would give 1 + 2^-7.
        const std::uint64_t twice = 0x3ff0100000100000ULL;
        std::uint8_t in[8], out[2];
        std::memcpy(in, &twice, 8);
        castFloats("float64", "bfloat16", in, 1, out);
        QCOMPARE(static_cast<std::uint16_t>(out[0] | (out[1] << 8)), std::uint16_t(0x3f80));
    }

    void halfToBfloat16NanIsTorchsScalarOne()
    {
        const std::uint8_t in[4] = {0x23, 0xfd, 0x00, 0x3c}; // a negative NaN, 1.0
        std::uint8_t out[4];
        castFloats("float16", "bfloat16", in, 2, out);
        QCOMPARE(out[0], std::uint8_t(0xc0));
        QCOMPARE(out[1], std::uint8_t(0x7f));
        QCOMPARE(out[2], std::uint8_t(0x80));
        QCOMPARE(out[3], std::uint8_t(0x3f));
    }

    void sinkCarriesSplitElements()
    {
        // Three float32 values given in pieces of 3, 6 and 3 bytes: the same bytes as one cast.
        const float values[3] = {1.5f, -65520.0f, 3.0e-8f};
        std::uint8_t bytes[12];
        std::memcpy(bytes, values, 12);
        std::uint8_t whole[6];
        castFloats("float32", "float16", bytes, 3, whole);
        std::vector<std::uint8_t> got;
        FloatCastSink sink("float32", "float16", [&](ByteView piece) -> Status {
            got.insert(got.end(), piece.begin(), piece.end());
            return std::nullopt;
        });
        QVERIFY(!sink(ByteView(bytes, 3)));
        QVERIFY(!sink(ByteView(bytes + 3, 6)));
        QVERIFY(!sink(ByteView(bytes + 9, 3)));
        QVERIFY(!sink.finish());
        QCOMPARE(got, std::vector<std::uint8_t>(whole, whole + 6));
        FloatCastSink partial("float32", "float16", [](ByteView) -> Status { return std::nullopt; });
        QVERIFY(!partial(ByteView(bytes, 5)));
        QVERIFY(partial.finish().has_value()); // a byte of an element left over
    }
};

QTEST_GUILESS_MAIN(TestFloatCast)
#include "tst_floatcast.moc"
