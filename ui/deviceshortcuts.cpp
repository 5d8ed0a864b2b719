// SPDX-License-Identifier: MIT
#include "ui/deviceshortcuts.h"

#include "ui/actiontable.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/models/devicemodel.h"

#include <QMenu>
#include <QMimeData>
#include <QWidget>

namespace ckpt {

DeviceShortcuts::DeviceShortcuts(
    DocumentController* documents, std::function<std::unique_ptr<QMimeData>()> selection, QWidget* parent)
    : QObject(parent)
    , m_documents(documents)
    , m_selection(std::move(selection))
{
    m_menu = new QMenu(tr("Move &Selection To"), parent);
    m_menu->setObjectName(QStringLiteral("moveSelectionMenu"));
    const auto add = [this, parent](const QString& tag, int key, const char* objectName) {
        QAction* action = createAction(parent,
            {objectName, tag, QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_0 + key)),
                tr("Plan the selected tensors and modules onto %1 (as a drop onto its card)").arg(tag),
                [this, tag] { moveSelectionTo(tag); }});
        action->setData(tag);
        m_menu->addAction(action);
        m_actions.push_back(action);
    };
    static const char* const names[]
        = {"actionMoveToCuda0", "actionMoveToCuda1", "actionMoveToCuda2", "actionMoveToCuda3",
            "actionMoveToCuda4", "actionMoveToCuda5", "actionMoveToCuda6", "actionMoveToCuda7"};
    add(QStringLiteral("cpu"), 0, "actionMoveToCpu");
    m_menu->addSeparator();
    for (int gpu = 0; gpu < kGpuCount; ++gpu)
        add(QStringLiteral("cuda:%1").arg(gpu), gpu + 1, names[gpu]);
    updateActions(false);
}

void DeviceShortcuts::updateActions(bool hasSelection)
{
    CheckpointDocument* document = m_documents->document();
    for (QAction* action : m_actions) {
        const std::string tag = action->data().toString().toStdString();
        bool onTarget = false;
        if (document)
            for (const DeviceInfo& device : document->target().devices)
                onTarget = onTarget || device.tag == tag;
        action->setEnabled(document && hasSelection && (onTarget || tag == "cpu"));
        action->setVisible(onTarget || tag == "cpu" || !document);
    }
}

bool DeviceShortcuts::moveSelectionTo(const QString& tag)
{
    CheckpointDocument* document = m_documents->document();
    const std::unique_ptr<QMimeData> payload = m_selection ? m_selection() : nullptr;
    if (!document || !payload)
        return false;
    const std::optional<MoveReport> report = DeviceModel::dropOnDevice(document, payload.get(), tag);
    if (!report)
        return false;
    Q_EMIT moved(report->text);
    return true;
}

} // namespace ckpt
