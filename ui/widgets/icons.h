// SPDX-License-Identifier: MIT
#pragma once

#include <QIcon>
#include <QString>

namespace ckpt {

// The app's toolbar icons, drawn with QPainter at the size and device pixel ratio asked for, so they
// are sharp on every screen (this Qt has no SVG module to read SVG files with). Names: "open",
// "save", "undo", "redo", "cpu", "auto", "target", "tour". The colour follows the palette's text.
QIcon appIcon(const QString& name);

} // namespace ckpt
