// SPDX-License-Identifier: MIT
#include "ui/base/devicecolors.h"

#include <array>

namespace ckpt {

namespace {

// Tableau 10, reordered so the first four GPUs get the hues people name first.
constexpr std::array<QRgb, 9> kCudaPalette = {
    0x4E79A7, // blue
    0xF28E2B, // orange
    0x59A14F, // green
    0xB07AA1, // purple
    0xE15759, // red
    0x76B7B2, // teal
    0xEDC948, // yellow
    0xFF9DA7, // pink
    0x9C755F, // brown
};
// For tags the app knows nothing about: hues away from the CUDA ones, picked by a stable hash.
constexpr std::array<QRgb, 4> kOtherPalette = {0x8CD17D, 0x86BCB6, 0xD4A6C8, 0xB6992D};

constexpr QRgb kCpuGrey = 0x8F8F8F;
constexpr QRgb kNeutral = 0xD0D0D0;

// The number after the colon ("cuda:12" -> 12), 0 for a bare tag ("cuda"), -1 when not a number.
int deviceOrdinal(const QString& tag)
{
    const qsizetype colon = tag.indexOf(QLatin1Char(':'));
    if (colon < 0)
        return 0;
    bool ok = false;
    const int value = tag.mid(colon + 1).toInt(&ok);
    return ok && value >= 0 ? value : -1;
}

QString deviceKind(const QString& tag)
{
    const qsizetype colon = tag.indexOf(QLatin1Char(':'));
    return colon < 0 ? tag : tag.left(colon);
}

QString ordinalWord(int index)
{
    static const char* const words[]
        = {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"};
    if (index >= 0 && index < 10)
        return QLatin1String(words[index]);
    return QStringLiteral("number %1 (counting from 0)").arg(index);
}

} // namespace

QColor deviceColor(const QString& tag)
{
    const QString kind = deviceKind(tag);
    if (tag.isEmpty() || tag == QLatin1String("(none)") || kind == QLatin1String("meta"))
        return QColor(kNeutral);
    if (kind == QLatin1String("cpu"))
        return QColor(kCpuGrey);
    if (kind == QLatin1String("cuda")) {
        const int ordinal = deviceOrdinal(tag);
        const QColor base(kCudaPalette[static_cast<std::size_t>(qMax(0, ordinal)) % kCudaPalette.size()]);
        // Bare "cuda" is the current GPU, usually cuda:0: the same hue, lighter, so both read as
        // related but can still be told apart.
        return tag.contains(QLatin1Char(':')) ? base : base.lighter(130);
    }
    if (kind == QLatin1String("mps"))
        return QColor(0x499894); // dark teal
    if (kind == QLatin1String("xpu")) {
        // Intel GPUs: one magenta family, darker per ordinal.
        const int ordinal = qMax(0, deviceOrdinal(tag));
        return QColor(0xD37295).darker(100 + (ordinal % 4) * 15);
    }
    const std::size_t hash = qHash(kind);
    return QColor(kOtherPalette[hash % kOtherPalette.size()]);
}

QColor deviceTextColor(const QString& tag)
{
    const QColor background = deviceColor(tag);
    // Relative luminance (sRGB weights, without linearisation: close enough to choose black or white).
    const double luminance
        = 0.2126 * background.redF() + 0.7152 * background.greenF() + 0.0722 * background.blueF();
    return luminance > 0.55 ? QColor(Qt::black) : QColor(Qt::white);
}

QString deviceTooltip(const QString& tag)
{
    const QString kind = deviceKind(tag);
    const int ordinal = deviceOrdinal(tag);
    const bool numbered = tag.contains(QLatin1Char(':')) && ordinal >= 0;
    if (tag.isEmpty() || tag == QLatin1String("(none)"))
        return QStringLiteral(
            "(none): the file records no device for this storage; torch.load puts it on the CPU");
    if (kind == QLatin1String("cpu"))
        return tag + QStringLiteral(": the computer's main memory (RAM), used by the CPU");
    if (kind == QLatin1String("meta"))
        return tag + QStringLiteral(": no memory at all; a meta tensor has a shape and a dtype but no data");
    if (kind == QLatin1String("cuda"))
        return numbered
            ? QString(tag + QStringLiteral(": the ") + ordinalWord(ordinal)
                + QStringLiteral(" CUDA GPU as torch numbers them"))
            : QString(
                tag + QStringLiteral(": the current CUDA GPU (cuda:0 unless the program picks another)"));
    if (kind == QLatin1String("mps"))
        return tag + QStringLiteral(": the GPU of an Apple-silicon Mac (Metal Performance Shaders)");
    if (kind == QLatin1String("xpu"))
        return numbered ? QString(
                   tag + QStringLiteral(": the ") + ordinalWord(ordinal) + QStringLiteral(" Intel GPU (XPU)"))
                        : QString(tag + QStringLiteral(": the current Intel GPU (XPU)"));
    return tag + QStringLiteral(": a device torch calls '") + kind
        + QStringLiteral("'; this machine may not have one");
}

} // namespace ckpt
