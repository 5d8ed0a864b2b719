// SPDX-License-Identifier: MIT
#include "ui/widgets/tensortreeview.h"

namespace ckpt {

void TensorTreeView::dataChanged(
    const QModelIndex& topLeft, const QModelIndex& bottomRight, const QList<int>& roles)
{
    if (topLeft.isValid())
        for (QModelIndex ancestor = topLeft.parent(); ancestor.isValid(); ancestor = ancestor.parent())
            if (!isExpanded(ancestor))
                return; // not shown: painting reads the model afresh when it is expanded
    constexpr int kRowsWorthLookingUp = 32;
    if (topLeft.isValid() && bottomRight.isValid() && topLeft.parent() == bottomRight.parent()
        && bottomRight.row() - topLeft.row() >= kRowsWorthLookingUp) {
        viewport()->update();
        return;
    }
    QTreeView::dataChanged(topLeft, bottomRight, roles);
}

} // namespace ckpt
