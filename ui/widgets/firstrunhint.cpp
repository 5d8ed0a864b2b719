// SPDX-License-Identifier: MIT
#include "ui/widgets/firstrunhint.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QTextDocument>
#include <QToolButton>

namespace ckpt {

FirstRunHint::FirstRunHint(QWidget* parent)
    : QFrame(parent)
{
    setObjectName(QStringLiteral("firstRunHint"));
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    m_label = new QLabel(this);
    m_label->setWordWrap(true);
    m_label->setTextFormat(Qt::RichText);
    m_label->setText(
        tr("<b>Start here:</b> drag a module from the tree onto a device card, or select rows and press "
           "<b>Ctrl+0</b> (CPU) or <b>Ctrl+1</b>… (cuda:0…). The chart and the Findings follow the plan; "
           "Ctrl+Z undoes; <i>Save Copy</i> writes a file that loads there. New to this? "
           "<i>Help › Guided Tour</i>."));
    m_close = new QToolButton(this);
    m_close->setObjectName(QStringLiteral("dismissHintButton"));
    m_close->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
    m_close->setAutoRaise(true);
    m_close->setToolTip(tr("Hide this hint (it stays hidden)"));
    m_close->setAccessibleName(tr("Hide the hint"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 4, 4, 4);
    layout->addWidget(m_label, 1);
    layout->addWidget(m_close, 0, Qt::AlignTop);
    connect(m_close, &QToolButton::clicked, this, [this] {
        hide();
        Q_EMIT dismissed();
    });
    restyle();
}

QString FirstRunHint::text() const
{
    QTextDocument document;
    document.setHtml(m_label->text());
    return document.toPlainText();
}

void FirstRunHint::changeEvent(QEvent* event)
{
    QFrame::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        restyle();
}

void FirstRunHint::restyle()
{
    QPalette palette = this->palette();
    const QColor base = palette.color(QPalette::Base);
    QColor tint = palette.color(QPalette::Highlight);
    // A pale wash of the highlight over the base colour, readable in both palettes.
    tint = QColor::fromRgbF(base.redF() * 0.82 + tint.redF() * 0.18,
        base.greenF() * 0.82 + tint.greenF() * 0.18, base.blueF() * 0.82 + tint.blueF() * 0.18);
    if (palette.color(QPalette::Window) != tint) {
        palette.setColor(QPalette::Window, tint);
        setPalette(palette);
    }
}

} // namespace ckpt
