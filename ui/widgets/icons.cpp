// SPDX-License-Identifier: MIT
#include "ui/widgets/icons.h"

#include <QApplication>
#include <QIconEngine>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QPixmap>

namespace ckpt {

namespace {

// A path through `points` in order (closed back to the first when `closed`): the icons are drawn
// as polylines on the grid.
QPainterPath pathThrough(std::initializer_list<QPointF> points, bool closed = false)
{
    QPainterPath path;
    for (const QPointF& point : points) {
        if (path.elementCount() == 0)
            path.moveTo(point);
        else
            path.lineTo(point);
    }
    if (closed)
        path.closeSubpath();
    return path;
}

// Draws one icon on a 24×24 grid scaled to `rect`.
void drawIcon(
    QPainter& painter, const QString& name, const QRectF& rect, const QColor& ink, const QColor& accent)
{
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing);
    painter.translate(rect.topLeft());
    painter.scale(rect.width() / 24.0, rect.height() / 24.0);
    QPen pen(ink, 1.8, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin);
    painter.setPen(pen);
    painter.setBrush(Qt::NoBrush);
    const auto arrowHead = [&](QPointF tip, QPointF back1, QPointF back2) {
        painter.drawPath(pathThrough({back1, tip, back2}));
    };
    if (name == QLatin1String("open")) {
        painter.drawPath(pathThrough({{3, 19}, {3, 5}, {9, 5}, {11, 7}, {20, 7}, {20, 10}}));
        painter.setBrush(accent);
        painter.drawPath(pathThrough({{3, 19}, {6, 10}, {22, 10}, {19, 19}}, true));
    } else if (name == QLatin1String("save")) {
        painter.drawPath(pathThrough({{4, 4}, {17, 4}, {20, 7}, {20, 20}, {4, 20}}, true));
        painter.setBrush(accent);
        painter.drawRect(QRectF(7, 13, 10, 7));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(QRectF(8, 4, 7, 5));
    } else if (name == QLatin1String("undo") || name == QLatin1String("redo")) {
        if (name == QLatin1String("redo")) {
            painter.translate(24, 0);
            painter.scale(-1, 1);
        }
        QPainterPath curve;
        curve.moveTo(5, 10);
        curve.lineTo(14, 10);
        curve.cubicTo(22, 10, 22, 20, 14, 20);
        curve.lineTo(9, 20);
        painter.drawPath(curve);
        arrowHead(QPointF(5, 10), QPointF(9, 6), QPointF(9, 14));
    } else if (name == QLatin1String("cpu")) {
        painter.setBrush(accent);
        painter.drawRoundedRect(QRectF(6, 6, 12, 12), 2, 2);
        painter.setBrush(Qt::NoBrush);
        for (const double at : {9.0, 12.0, 15.0}) {
            painter.drawLine(QPointF(at, 2.5), QPointF(at, 5.5));
            painter.drawLine(QPointF(at, 18.5), QPointF(at, 21.5));
            painter.drawLine(QPointF(2.5, at), QPointF(5.5, at));
            painter.drawLine(QPointF(18.5, at), QPointF(21.5, at));
        }
    } else if (name == QLatin1String("auto")) {
        // Blocks falling into place on two devices.
        painter.drawRect(QRectF(3, 13, 8, 8));
        painter.drawRect(QRectF(13, 13, 8, 8));
        painter.setBrush(accent);
        painter.drawRect(QRectF(5, 15, 4, 4));
        painter.drawRect(QRectF(15, 15, 4, 4));
        painter.setBrush(Qt::NoBrush);
        painter.drawLine(QPointF(12, 3), QPointF(12, 9));
        arrowHead(QPointF(12, 10), QPointF(9, 7), QPointF(15, 7));
        painter.drawLine(QPointF(5, 4), QPointF(7, 6));
        painter.drawLine(QPointF(19, 4), QPointF(17, 6));
    } else if (name == QLatin1String("target")) {
        painter.drawRoundedRect(QRectF(3, 4, 18, 12), 1.5, 1.5);
        painter.drawLine(QPointF(12, 16), QPointF(12, 20));
        painter.drawLine(QPointF(7, 20), QPointF(17, 20));
        painter.setBrush(accent);
        painter.drawEllipse(QPointF(12, 10), 2.5, 2.5);
    } else if (name == QLatin1String("tour")) {
        painter.setBrush(accent);
        painter.drawPath(pathThrough({{2, 9}, {12, 4}, {22, 9}, {12, 14}}, true));
        painter.setBrush(Qt::NoBrush);
        QPainterPath band;
        band.moveTo(6, 11);
        band.lineTo(6, 16);
        band.cubicTo(9, 19, 15, 19, 18, 16);
        band.lineTo(18, 11);
        painter.drawPath(band);
        painter.drawLine(QPointF(22, 9), QPointF(22, 15));
    }
    painter.restore();
}

class PaintedIconEngine : public QIconEngine {
public:
    explicit PaintedIconEngine(QString name)
        : m_name(std::move(name))
    { }

    void paint(QPainter* painter, const QRect& rect, QIcon::Mode mode, QIcon::State) override
    {
        const QPalette palette = QApplication::palette();
        QColor ink = palette.color(
            mode == QIcon::Disabled ? QPalette::Disabled : QPalette::Active, QPalette::WindowText);
        if (mode == QIcon::Disabled)
            ink.setAlphaF(0.45f);
        QColor accent = palette.color(QPalette::Highlight);
        accent.setAlphaF(mode == QIcon::Disabled ? 0.25f : 0.55f);
        drawIcon(*painter, m_name, QRectF(rect), ink, accent);
    }

    QPixmap pixmap(const QSize& size, QIcon::Mode mode, QIcon::State state) override
    {
        return scaledPixmap(size, mode, state, 1.0);
    }

    // `size` is in device pixels already (QIcon::pixmap(size, dpr) asks for size × dpr).
    QPixmap scaledPixmap(const QSize& size, QIcon::Mode mode, QIcon::State state, qreal scale) override
    {
        QPixmap pixmap(size);
        pixmap.fill(Qt::transparent);
        pixmap.setDevicePixelRatio(scale);
        QPainter painter(&pixmap);
        paint(&painter, QRect(QPoint(0, 0), (QSizeF(size) / scale).toSize()), mode, state);
        return pixmap;
    }

    QIconEngine* clone() const override { return new PaintedIconEngine(m_name); }
    QString key() const override { return QStringLiteral("ckpt-painted"); }

private:
    QString m_name;
};

} // namespace

QIcon appIcon(const QString& name)
{
    return QIcon(new PaintedIconEngine(name));
}

} // namespace ckpt
