// SPDX-License-Identifier: MIT
#include "ui/widgets/safetybanner.h"

#include <QLabel>
#include <QTextDocument>
#include <QVBoxLayout>

namespace ckpt {

namespace {

QString escaped(const std::string& text)
{
    // Control characters from a hostile file never reach the label as markup or raw bytes.
    QString out = QString::fromStdString(text).toHtmlEscaped();
    for (QChar& c : out)
        if (c.unicode() < 0x20 || c.unicode() == 0x7f)
            c = QChar(0xfffd);
    return out;
}

} // namespace

SafetyBanner::SafetyBanner(QWidget* parent)
    : QFrame(parent)
{
    setObjectName(QStringLiteral("safetyBanner"));
    setAccessibleName(tr("Safety verdict"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);
    m_label = new QLabel(this);
    m_label->setObjectName(QStringLiteral("safetyBannerText"));
    m_label->setWordWrap(true);
    m_label->setTextFormat(Qt::RichText);
    m_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_label);
    hide();
}

void SafetyBanner::present(const QString& background, const QString& border, const QString& html)
{
    setStyleSheet(QStringLiteral("#safetyBanner { background: %1; border: 1px solid %2; border-radius: 4px; }"
                                 "#safetyBannerText { color: #1a1a1a; }")
                      .arg(background, border));
    m_label->setText(html);
    setVisible(true);
}

void SafetyBanner::setChecking()
{
    m_rating = PickleSafety::NoPickle;
    present(QStringLiteral("#f1f3f4"), QStringLiteral("#c0c4c8"),
        tr("Checking what loading this file would run… (nothing in it is executed)"));
}

void SafetyBanner::setVerdict(const SafetyVerdict& verdict)
{
    m_rating = verdict.rating;
    switch (verdict.rating) {
    case PickleSafety::NoPickle:
        clear();
        return;
    case PickleSafety::DangerousOrUnknown: {
        QString html = tr("<b>&#9888; %1</b>").arg(escaped(verdict.headline));
        QStringList lines;
        for (const UnsafeCallable& callable : verdict.unsafe) {
            if (lines.size() >= 5)
                break;
            lines << tr("<b>%1</b>: %2").arg(escaped(callable.name), escaped(callable.reason));
        }
        for (const std::string& problem : verdict.cannotVerify) {
            if (lines.size() >= 6)
                break;
            lines << escaped(problem);
        }
        if (!lines.isEmpty())
            html += QStringLiteral("<br>") + lines.join(QStringLiteral("<br>"));
        html += tr("<br>Do not load it with <tt>weights_only=False</tt>, <tt>pickle.load</tt> or any loader "
                   "that falls back to them. Nothing in it was run here.");
        present(QStringLiteral("#fde7e9"), QStringLiteral("#c62828"), html);
        return;
    }
    case PickleSafety::NeedsAllowlist: {
        QString html = tr("<b>Needs allowlisting</b>: %1").arg(escaped(verdict.headline));
        if (!verdict.addSafeGlobals2.empty())
            html
                += tr("<br>torch.load(weights_only=True) loads it after: <tt>%1</tt>")
                       .arg(
                           escaped(verdict.addSafeGlobals2).replace(QLatin1Char('\n'), QStringLiteral("; ")));
        present(QStringLiteral("#fff4e0"), QStringLiteral("#e0a030"), html);
        return;
    }
    case PickleSafety::KnownInert:
        present(QStringLiteral("#e8f5e9"), QStringLiteral("#66bb6a"),
            tr("<b>Known inert</b>: every pickle holds only vetted data classes on torch's default "
               "weights_only list; loading it cannot run code."));
        return;
    }
}

void SafetyBanner::clear()
{
    m_rating = PickleSafety::NoPickle;
    m_label->clear();
    hide();
}

QString SafetyBanner::text() const
{
    QTextDocument document;
    document.setHtml(m_label->text());
    return document.toPlainText();
}

} // namespace ckpt
