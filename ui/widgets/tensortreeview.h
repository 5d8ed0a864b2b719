// SPDX-License-Identifier: MIT
#pragma once

#include <QTreeView>

namespace ckpt {

// The tensor tree's view. QTreeView answers every dataChanged by looking up each row of the range
// among the rows it shows (a linear search per row), even when the rows sit under a collapsed
// module; a drop that moves a 100,000-tensor module sends a range per block and spent most of a
// second there. Rows under a collapsed ancestor are not on screen, so their changes cost nothing
// here; a long visible range repaints the viewport once.
class TensorTreeView : public QTreeView {
    Q_OBJECT

public:
    using QTreeView::QTreeView;

protected:
    void dataChanged(
        const QModelIndex& topLeft, const QModelIndex& bottomRight, const QList<int>& roles = {}) override;
};

} // namespace ckpt
