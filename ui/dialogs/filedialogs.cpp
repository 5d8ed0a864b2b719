// SPDX-License-Identifier: MIT
#include "ui/dialogs/filedialogs.h"

#include "core/io/remotefile.h"
#include "core/model/shardset.h"
#include "ui/document/checkpointdocument.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QInputDialog>
#include <QMessageBox>

#include <set>

namespace ckpt {

QString askCheckpointToOpen(QWidget* parent, const QString& currentFile)
{
    const QString startDir = currentFile.isEmpty() ? QString() : QFileInfo(currentFile).absolutePath();
    return QFileDialog::getOpenFileName(parent, QObject::tr("Open Checkpoint"), startDir,
        QObject::tr("PyTorch checkpoints (*.pt *.pth *.bin *.ckpt *.tar *.safetensors);;All files (*)"));
}

QString askCheckpointFolderToOpen(QWidget* parent, const QString& currentFile)
{
    return QFileDialog::getExistingDirectory(parent, QObject::tr("Open Checkpoint Folder"),
        currentFile.isEmpty() ? QString() : QFileInfo(currentFile).absolutePath());
}

QString askCheckpointUrlToOpen(QWidget* parent)
{
    QString url;
    for (;;) {
        bool accepted = false;
        url = QInputDialog::getText(parent, QObject::tr("Open URL"),
            QObject::tr("The http(s) URL of a checkpoint, or of an index (*.index.json) whose shards lie "
                        "beside it.\nOnly the bytes the tree needs are read (HTTP range requests)."),
            QLineEdit::Normal, url, &accepted)
                  .trimmed();
        if (!accepted || url.isEmpty())
            return {};
        if (isRemoteUrl(url.toStdString()))
            return url;
        QMessageBox::warning(
            parent, QObject::tr("Open URL"), QObject::tr("%1 is not an http:// or https:// URL.").arg(url));
    }
}

QString askRemappedCopyPath(QWidget* parent, const CheckpointDocument& document)
{
    const QFileInfo input(document.filePath());
    QString suffix = QStringLiteral("remapped");
    if (const auto mapping = document.plan().asTagMapping()) {
        std::set<std::string> targets;
        for (const auto& [from, to] : *mapping)
            targets.insert(to);
        if (targets.size() == 1)
            suffix = QString::fromStdString(*targets.begin()).replace(QLatin1Char(':'), QLatin1Char('-'));
    }
    if (document.checkpoint().shardSet && document.checkpoint().shardSet->bundle) {
        // A bundle is saved as a new bundle of its kind: model.tar.gz -> model-cpu.tar.gz.
        const QString proposal = input.dir().filePath(
            input.baseName() + QLatin1Char('-') + suffix + QLatin1Char('.') + input.completeSuffix());
        return QFileDialog::getSaveFileName(parent, QObject::tr("Save Remapped Copy"), proposal,
            QObject::tr("Archives (*.tar *.tar.gz *.tgz *.nemo *.zip *.gz);;All files (*)"));
    }
    const QString proposal = document.checkpoint().shardSet // a folder is saved as a new folder
        ? input.dir().filePath(input.fileName() + QLatin1Char('-') + suffix)
        : input.dir().filePath(input.completeBaseName() + QLatin1Char('-') + suffix + QStringLiteral(".pt"));
    return QFileDialog::getSaveFileName(parent, QObject::tr("Save Remapped Copy"), proposal,
        QObject::tr("PyTorch checkpoints (*.pt *.pth *.bin *.ckpt);;All files (*)"));
}

QString askWeightsExportPath(QWidget* parent, const CheckpointDocument& document)
{
    const QFileInfo input(document.filePath());
    return QFileDialog::getSaveFileName(parent, QObject::tr("Export Weights"),
        input.dir().filePath(input.completeBaseName() + QStringLiteral("-weights.pt")),
        QObject::tr(
            "state_dict for torch.load(weights_only=True) (*.pt);;safetensors (*.safetensors);;All files "
            "(*)"));
}

std::optional<WeightsValueChoices> askWeightsValueChoices(QWidget* parent, const QString& path)
{
    QDialog dialog(parent);
    dialog.setObjectName(QStringLiteral("weightsValueChoices"));
    dialog.setWindowTitle(QObject::tr("Export Weights"));
    auto* layout = new QFormLayout(&dialog);
    auto* dtype = new QComboBox(&dialog);
    dtype->setObjectName(QStringLiteral("exportDtype"));
    dtype->addItem(QObject::tr("As they are"), QString());
    for (const char* name : {"bfloat16", "float16", "float32"})
        dtype->addItem(QString::fromLatin1(name), QString::fromLatin1(name));
    dtype->setToolTip(QObject::tr("float64, float32, float16 and bfloat16 tensors written in this dtype, "
                                  "rounded as torch's .to(dtype) rounds them; float8, integers and bool "
                                  "stay as they are"));
    layout->addRow(QObject::tr("Floating tensors:"), dtype);
    auto* plain = new QCheckBox(QObject::tr("NumPy values as Python numbers and tensors"), &dialog);
    plain->setObjectName(QStringLiteral("exportPlainValues"));
    plain->setToolTip(QObject::tr("So that torch.load(weights_only=True) needs no allowlisting"));
    plain->setEnabled(!path.endsWith(QStringLiteral(".safetensors")));
    layout->addRow(QString(), plain);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted)
        return std::nullopt;
    return WeightsValueChoices {
        dtype->currentData().toString().toStdString(), plain->isEnabled() && plain->isChecked()};
}

QString askMapLocationExportPath(QWidget* parent, const CheckpointDocument& document)
{
    const QFileInfo input(document.filePath());
    return QFileDialog::getSaveFileName(parent, QObject::tr("Export Plan as map_location"),
        input.dir().filePath(input.completeBaseName() + QStringLiteral("-load.py")),
        QObject::tr("Python (*.py);;All files (*)"));
}

QString askDeviceMapExportPath(QWidget* parent, const CheckpointDocument& document)
{
    const QFileInfo input(document.filePath());
    return QFileDialog::getSaveFileName(parent, QObject::tr("Export Plan as device_map"),
        input.dir().filePath(input.completeBaseName() + QStringLiteral("-device_map.json")),
        QObject::tr("JSON (*.json);;All files (*)"));
}

UnsavedPlacementAnswer askAboutUnsavedPlacement(QWidget* parent, const CheckpointDocument& document)
{
    QMessageBox box(QMessageBox::Warning, QObject::tr("Unsaved Placement"),
        QObject::tr("The placement of %1 was changed but no remapped copy was saved.")
            .arg(QFileInfo(document.filePath()).fileName()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, parent);
    box.setInformativeText(QObject::tr("Save a remapped copy first?"));
    box.setDefaultButton(QMessageBox::Save);
    switch (box.exec()) {
    case QMessageBox::Save:
        return UnsavedPlacementAnswer::Save;
    case QMessageBox::Discard:
        return UnsavedPlacementAnswer::Discard;
    default:
        return UnsavedPlacementAnswer::Cancel;
    }
}

} // namespace ckpt
