// SPDX-License-Identifier: MIT
#include "ui/dialogs/dangeroussave.h"

#include "core/model/checkpoint.h"
#include "core/report/savecopyreport.h"
#include "core/tasks/savecopy.h"
#include "ui/document/documentcontroller.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QMessageBox>
#include <QPushButton>
#include <QSpacerItem>

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

bool DangerousSaveGuard::refuse(
    const Checkpoint& checkpoint, const QString& outputPath, const PlacementPlan* plan)
{
    const std::optional<SaveCopyOutcome> refusal = refuseSaveCopy(checkpoint, false, false, plan);
    if (!refusal || refusal->status != SaveCopyStatus::RefusedDangerous)
        return false; // saved, or refused by the save job for another reason, with its message
    const SafetyVerdict& verdict = refusal->assessment.gatingSafety();
    const std::optional<std::string>& cannotRemap = refusal->assessment.cannotRemap;
    const QString name = QFileInfo(fromStd(refusal->input)).fileName();
    const QString headline = tr("Refusing to write a copy of %1: %2").arg(name, fromStd(verdict.headline));
    // What the faces say is one text (core/report), the ways out named as this window offers them
    // (`ckpt-inspect remap` prints the same lines): the answer carries it, and the dialog lays it
    // out, its first line as the headline and the ways out as a list.
    const QString report
        = fromStd(saveCopyRefusalText(*refusal, DocumentController::saveCopyWording(checkpoint))).trimmed();
    QString details;
    bool inList = false;
    const QStringList lines = report.split(QLatin1Char('\n'));
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const bool item = lines[i].startsWith(QStringLiteral("  - "));
        if (item != inList)
            details += item ? QStringLiteral("<ul>") : QStringLiteral("</ul>");
        inList = item;
        const QString text = (item ? lines[i].mid(4) : lines[i]).toHtmlEscaped();
        details += item ? QStringLiteral("<li>%1</li>").arg(text) : QStringLiteral("<p>%1</p>").arg(text);
    }
    if (inList)
        details += QStringLiteral("</ul>");

    if (m_dialog)
        m_dialog->deleteLater();
    m_dialog = new QMessageBox(
        QMessageBox::Warning, tr("This File May Run Code"), headline, QMessageBox::NoButton, m_dialogParent);
    m_dialog->setObjectName(QStringLiteral("dangerousSaveDialog"));
    m_dialog->setAttribute(Qt::WA_DeleteOnClose);
    m_dialog->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_dialog->setInformativeText(details);
    // QMessageBox wraps its text narrowly; these sentences read better on wider lines.
    if (auto* grid = qobject_cast<QGridLayout*>(m_dialog->layout()))
        grid->addItem(new QSpacerItem(560, 0, QSizePolicy::Minimum, QSizePolicy::Expanding), grid->rowCount(),
            0, 1, grid->columnCount());
    const bool canRemap = !cannotRemap;
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
                Q_EMIT finished(false, report, outputPath);
        });
    m_dialog->open();
    return true;
}

} // namespace ckpt
