// SPDX-License-Identifier: MIT
#include "ui/dialogs/dangeroussave.h"

#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/triage/triage.h"

#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

std::vector<std::string> unsafeNames(const SafetyVerdict& verdict)
{
    std::vector<std::string> names;
    for (const UnsafeCallable& callable : verdict.unsafe)
        names.push_back(callable.name);
    return names;
}

} // namespace

DangerousSaveGuard::DangerousSaveGuard(QWidget* dialogParent)
    : QObject(dialogParent)
    , m_dialogParent(dialogParent)
{ }

SafetyVerdict DangerousSaveGuard::rate(const Checkpoint& checkpoint)
{
    return checkpoint.shardSet ? rateShardSafety(checkpoint) : ratePickleSafety(checkpoint);
}

bool DangerousSaveGuard::refuse(const Checkpoint& checkpoint, const QString& outputPath)
{
    const SafetyVerdict verdict = rate(checkpoint);
    if (!verdict.dangerous())
        return false;
    const QString name = QFileInfo(fromStd(checkpoint.path)).fileName();
    QStringList callables;
    for (const UnsafeCallable& callable : verdict.unsafe) {
        if (callables.size() == 4) {
            callables.append(tr("…"));
            break;
        }
        callables.append(fromStd(callable.call.empty() ? callable.name : callable.call));
    }
    for (const std::string& reason : verdict.cannotVerify)
        if (callables.size() < 5)
            callables.append(tr("cannot verify: %1").arg(fromStd(reason)));
    const QString refusal = tr("Refusing to write a copy of %1: %2").arg(name, fromStd(verdict.headline));

    if (m_dialog)
        m_dialog->deleteLater();
    m_dialog = new QMessageBox(QMessageBox::Warning, tr("Not Saved: the File May Run Code"), refusal,
        QMessageBox::NoButton, m_dialogParent);
    m_dialog->setObjectName(QStringLiteral("dangerousSaveDialog"));
    m_dialog->setAttribute(Qt::WA_DeleteOnClose);
    m_dialog->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_dialog->setInformativeText(
        tr("Loading it with torch.load(weights_only=False) would run what its pickle calls:\n%1\n\n"
           "A remapped copy would carry the same code, so none is written (as `ckpt-inspect remap` "
           "refuses, exit 4). If you must keep a copy anyway, it can be copied byte for byte: nothing "
           "is remapped and the copy is exactly as dangerous (`--allow-dangerous`).")
            .arg(callables.join(QLatin1Char('\n'))));
    QPushButton* keep = m_dialog->addButton(tr("Do Not Save"), QMessageBox::RejectRole);
    QPushButton* copy
        = m_dialog->addButton(tr("Copy Byte for Byte, Still Dangerous"), QMessageBox::DestructiveRole);
    keep->setObjectName(QStringLiteral("refuseButton"));
    copy->setObjectName(QStringLiteral("copyUnchangedButton"));
    m_dialog->setDefaultButton(keep);
    m_dialog->setEscapeButton(keep);

    // The checkpoint outlives the dialog only as long as the document: keep what the copy needs.
    const auto file = checkpoint.file;
    const std::string inputPath = checkpoint.path;
    connect(m_dialog, &QMessageBox::buttonClicked, this,
        [this, copy, file, inputPath, verdict, outputPath, refusal](QAbstractButton* button) {
            if (button != copy || !file) {
                Q_EMIT finished(false, refusal, outputPath);
                return;
            }
            Checkpoint source;
            source.path = inputPath;
            source.file = file;
            const QString error = copyUnchanged(source, outputPath, verdict);
            if (!error.isEmpty())
                Q_EMIT finished(false, error, outputPath);
            else
                Q_EMIT finished(true,
                    tr("copied unchanged, still DANGEROUS: nothing was remapped; %1")
                        .arg(fromStd(verdict.headline)),
                    outputPath);
        });
    m_dialog->open();
    return true;
}

QString DangerousSaveGuard::copyUnchanged(
    const Checkpoint& checkpoint, const QString& outputPath, const SafetyVerdict& verdict)
{
    if (!checkpoint.file)
        return tr("%1 is not a single file at hand: nothing copied").arg(fromStd(checkpoint.path));
    const ByteView bytes = checkpoint.file->bytes();
    auto out = AtomicOutputFile::create(outputPath.toStdString(), checkpoint.path, bytes.size());
    if (!out)
        return fromStd(out.error().message);
    for (std::uint64_t done = 0; done < bytes.size();) {
        const ssize_t n = ::pwrite((*out)->fd(), bytes.data() + done, bytes.size() - done, off_t(done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return tr("writing %1: %2")
                .arg(QDir::toNativeSeparators(outputPath), QString::fromLocal8Bit(std::strerror(errno)));
        done += std::uint64_t(n);
    }
    // What lands under the name is exactly what was rated: read back, compared and rated again.
    ByteBuffer copy(bytes.size());
    for (std::uint64_t done = 0; done < copy.size();) {
        const ssize_t n = ::pread((*out)->fd(), copy.data() + done, copy.size() - done, off_t(done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return tr("reading back %1: %2")
                .arg(QDir::toNativeSeparators(outputPath), QString::fromLocal8Bit(std::strerror(errno)));
        done += std::uint64_t(n);
    }
    const SafetyVerdict copied = ratePickleSafety(ByteView(copy.data(), copy.size()));
    if (copied.rating != verdict.rating || unsafeNames(copied) != unsafeNames(verdict)
        || !std::equal(copy.begin(), copy.end(), bytes.begin()))
        return tr("the copy does not rate as the input did (%1): nothing written")
            .arg(fromStd(copied.headline));
    if (auto problem = (*out)->commit())
        return fromStd(problem->message);
    return {};
}

} // namespace ckpt
