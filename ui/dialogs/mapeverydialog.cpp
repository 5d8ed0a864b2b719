// SPDX-License-Identifier: MIT
#include "ui/dialogs/mapeverydialog.h"

#include "ui/document/checkpointdocument.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>

namespace ckpt {

MapEveryDialog::MapEveryDialog(const CheckpointDocument& document, QWidget* parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Map Every Device to Another"));
    m_from = new QComboBox(this);
    m_from->setObjectName(QStringLiteral("mapFrom"));
    for (const auto& [tag, bytes] : document.checkpoint().bytesByDevice()) {
        if (tag != "(none)")
            m_from->addItem(QStringLiteral("%1 (%2)").arg(
                                QString::fromStdString(tag), QString::fromStdString(formatBytes(bytes))),
                QString::fromStdString(tag));
    }
    m_to = new QComboBox(this);
    m_to->setObjectName(QStringLiteral("mapTo"));
    m_to->setEditable(true);
    for (const DeviceInfo& device : document.target().devices)
        m_to->addItem(QString::fromStdString(device.tag));
    if (m_to->findText(QStringLiteral("cpu")) < 0)
        m_to->addItem(QStringLiteral("cpu"));
    m_from->setToolTip(tr("A device recorded in the file (where torch.save found the storages)"));
    m_to->setToolTip(tr("The device the remapped copy records instead"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QFormLayout(this);
    layout->addRow(tr("Every storage recorded on:"), m_from);
    layout->addRow(tr("Goes to:"), m_to);
    layout->addRow(buttons);
}

bool MapEveryDialog::hasRecordedDevices() const
{
    return m_from->count() > 0;
}

std::string MapEveryDialog::fromTag() const
{
    return m_from->currentData().toString().toStdString();
}

std::string MapEveryDialog::toTag() const
{
    return m_to->currentText().trimmed().toStdString();
}

} // namespace ckpt
