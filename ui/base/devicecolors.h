// SPDX-License-Identifier: MIT
#pragma once

#include <QColor>
#include <QString>

namespace ckpt {

// Colours that say "which device" everywhere in the app (tree, device cards, chart, legend), so a
// class can follow one GPU across panels. Mid-saturation hues that read on light and dark palettes:
// cpu grey, cuda:0 blue, cuda:1 orange, cuda:2 green, cuda:3 purple, then more hues in a cycle;
// mps, xpu and unknown tags get hues of their own; "(none)" and meta are neutral.
QColor deviceColor(const QString& tag);
// Black or white, whichever reads better on deviceColor(tag).
QColor deviceTextColor(const QString& tag);
// One sentence for a classroom: "cuda:1: the second CUDA GPU as torch numbers them".
QString deviceTooltip(const QString& tag);

} // namespace ckpt
