// SPDX-License-Identifier: MIT
#include "ui/widgets/onelinebanner.h"

#include <QApplication>
#include <QEvent>
#include <QGridLayout>
#include <QLabel>
#include <QTextDocument>
#include <QToolButton>

namespace ckpt {

namespace {

QString plain(const QString& html)
{
    QTextDocument document;
    document.setHtml(html);
    return document.toPlainText();
}

} // namespace

OneLineBanner::OneLineBanner(const QString& objectName, QWidget* parent)
    : QFrame(parent)
{
    setObjectName(objectName);
    m_lineLabel = new QLabel(this);
    m_lineLabel->setObjectName(objectName + QStringLiteral("Text"));
    m_lineLabel->setTextFormat(Qt::RichText);
    m_lineLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // One line: a long one is cut at the edge rather than widening the tree's column.
    m_lineLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_moreLabel = new QLabel(this);
    m_moreLabel->setObjectName(objectName + QStringLiteral("More"));
    m_moreLabel->setTextFormat(Qt::RichText);
    m_moreLabel->setWordWrap(true);
    m_moreLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_moreLabel->hide();
    m_toggle = new QToolButton(this);
    m_toggle->setObjectName(objectName + QStringLiteral("Details"));
    m_toggle->setAutoRaise(true);
    m_toggle->setCheckable(true);
    m_toggle->setText(tr("details…"));
    // The theme sets the application's palette; a frame with a style sheet is not told of it
    // (its palette is the sheet's), so the banner listens to the application.
    qApp->installEventFilter(this);
    m_toggle->setAccessibleName(tr("Show the details here"));
    m_toggle->setToolTip(tr("Shows the rest here; the Findings dock has the full text"));
    connect(m_toggle, &QToolButton::toggled, this, &OneLineBanner::setExpanded);
    auto* layout = new QGridLayout(this);
    layout->setContentsMargins(8, 1, 2, 1);
    layout->setHorizontalSpacing(4);
    layout->setVerticalSpacing(2);
    layout->addWidget(m_lineLabel, 0, 0);
    layout->addWidget(m_toggle, 0, 1);
    layout->addWidget(m_moreLabel, 1, 0, 1, 2);
    layout->setColumnStretch(0, 1);
    hide();
}

OneLineBanner::Colors OneLineBanner::colors(Tone tone, const QPalette& palette)
{
    const bool dark = palette.color(QPalette::Window).lightness() < 128;
    switch (tone) {
    case Tone::Good:
        return dark ? Colors {QColor(0x1d, 0x3a, 0x22), QColor(0x3f, 0x8f, 0x4a), QColor(0xdc, 0xf0, 0xdc)}
                    : Colors {QColor(0xe8, 0xf5, 0xe9), QColor(0x66, 0xbb, 0x6a), QColor(0x1a, 0x1a, 0x1a)};
    case Tone::Caution:
        return dark ? Colors {QColor(0x4a, 0x3a, 0x12), QColor(0xc0, 0x8a, 0x20), QColor(0xf7, 0xe8, 0xc8)}
                    : Colors {QColor(0xff, 0xf4, 0xe0), QColor(0xe0, 0xa0, 0x30), QColor(0x1a, 0x1a, 0x1a)};
    case Tone::Danger:
        return dark ? Colors {QColor(0x55, 0x1d, 0x22), QColor(0xe0, 0x50, 0x50), QColor(0xfb, 0xe0, 0xe0)}
                    : Colors {QColor(0xfd, 0xe7, 0xe9), QColor(0xc6, 0x28, 0x28), QColor(0x1a, 0x1a, 0x1a)};
    case Tone::Neutral:
        break;
    }
    return dark ? Colors {QColor(0x30, 0x33, 0x36), QColor(0x5a, 0x5e, 0x62), QColor(0xe6, 0xe6, 0xe6)}
                : Colors {QColor(0xf1, 0xf3, 0xf4), QColor(0xc0, 0xc4, 0xc8), QColor(0x1a, 0x1a, 0x1a)};
}

void OneLineBanner::present(Tone tone, const QString& line, const QString& more)
{
    m_tone = tone;
    m_more = more;
    m_lineLabel->setText(line);
    m_lineLabel->setToolTip(plain(line));
    m_moreLabel->setText(more);
    m_toggle->setVisible(!more.isEmpty());
    setExpanded(m_expanded && !more.isEmpty());
    restyle();
    setAccessibleDescription(plain(line));
    show();
}

void OneLineBanner::clear()
{
    m_tone = Tone::Neutral;
    m_more.clear();
    m_lineLabel->clear();
    m_moreLabel->clear();
    setExpanded(false);
    hide();
}

void OneLineBanner::setExpanded(bool expanded)
{
    m_expanded = expanded && hasMore();
    m_moreLabel->setVisible(m_expanded);
    const QSignalBlocker blocker(m_toggle);
    m_toggle->setChecked(m_expanded);
    m_toggle->setText(m_expanded ? tr("less") : tr("details…"));
}

QString OneLineBanner::lineText() const
{
    return plain(m_lineLabel->text());
}

QString OneLineBanner::moreText() const
{
    return plain(m_more);
}

QString OneLineBanner::text() const
{
    return m_expanded ? lineText() + QLatin1Char('\n') + moreText() : lineText();
}

bool OneLineBanner::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == qApp && event->type() == QEvent::ApplicationPaletteChange && !m_restyling)
        restyle();
    return QFrame::eventFilter(watched, event);
}

void OneLineBanner::changeEvent(QEvent* event)
{
    QFrame::changeEvent(event);
    if ((event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange)
        && !m_restyling)
        restyle();
}

void OneLineBanner::restyle()
{
    // A style sheet on the frame alone: the labels take the text colour from it, the toggle keeps
    // the style's look.
    // The application's palette (the theme's): the frame's own is the style sheet's.
    const Colors c = colors(m_tone, QApplication::palette());
    m_restyling = true;
    setStyleSheet(QStringLiteral("#%1 { background: %2; border: 1px solid %3; border-radius: 3px; }"
                                 "#%1 QLabel, #%1 QToolButton { color: %4; background: transparent; }")
                      .arg(objectName(), c.background.name(), c.border.name(), c.text.name()));
    m_restyling = false;
}

} // namespace ckpt
