// SPDX-License-Identifier: MIT
#include "ui/dialogs/dangeroussave.h"

#include "core/model/checkpoint.h"
#include "core/report/savecopyreport.h"
#include "core/tasks/savecopy.h"
#include "ui/document/documentcontroller.h"

#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

} // namespace

DangerousSaveGuard::DangerousSaveGuard(QWidget* dialogParent)
    : QObject(dialogParent)
    , m_dialogParent(dialogParent)
{ }

SafetyVerdict DangerousSaveGuard::rate(const Checkpoint& checkpoint)
{
    return assessSaveCopy(checkpoint).inputSafety;
}

bool DangerousSaveGuard::refuse(const Checkpoint& checkpoint, const QString& outputPath)
{
    const std::optional<SaveCopyOutcome> refusal = refuseSaveCopy(checkpoint, false);
    if (!refusal || refusal->status != SaveCopyStatus::RefusedDangerous)
        return false; // saved, or refused by the save job for another reason, with its message
    const SafetyVerdict& verdict = refusal->assessment.inputSafety;
    const bool canRemap = !refusal->assessment.cannotRemap;
    const QString name = QFileInfo(fromStd(refusal->input)).fileName();
    const QString headline = tr("Refusing to write a copy of %1: %2").arg(name, fromStd(verdict.headline));
    // The same words as `ckpt-inspect remap`, the ways out named as this window offers them.
    const QString report
        = fromStd(saveCopyRefusalText(*refusal, DocumentController::saveCopyWording(checkpoint)));

    if (m_dialog)
        m_dialog->deleteLater();
    m_dialog = new QMessageBox(
        QMessageBox::Warning, tr("This File May Run Code"), headline, QMessageBox::NoButton, m_dialogParent);
    m_dialog->setObjectName(QStringLiteral("dangerousSaveDialog"));
    m_dialog->setAttribute(Qt::WA_DeleteOnClose);
    m_dialog->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // The report without its first line, which the headline above says.
    m_dialog->setInformativeText(report.section(QLatin1Char('\n'), 1).trimmed());
    QPushButton* keep = m_dialog->addButton(tr("Do Not Save"), QMessageBox::RejectRole);
    keep->setObjectName(QStringLiteral("refuseButton"));
    QPushButton* trust = nullptr;
    if (canRemap) {
        trust = m_dialog->addButton(tr("I trust this file: remap anyway"), QMessageBox::DestructiveRole);
        trust->setObjectName(QStringLiteral("remapAnywayButton"));
        trust->setToolTip(tr("Writes the remapped copy. It is exactly as dangerous as this file: loading it "
                             "with torch.load(weights_only=False) runs the same code."));
    }
    m_dialog->setDefaultButton(keep);
    m_dialog->setEscapeButton(keep);

    connect(m_dialog, &QMessageBox::buttonClicked, this,
        [this, trust, report, outputPath](QAbstractButton* button) {
            if (trust && button == trust)
                Q_EMIT remapApproved(outputPath);
            else
                Q_EMIT finished(false, report.trimmed(), outputPath);
        });
    m_dialog->open();
    return true;
}

} // namespace ckpt
