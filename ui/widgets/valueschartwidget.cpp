// SPDX-License-Identifier: MIT
#include "ui/widgets/valueschartwidget.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QEvent>
#include <QGraphicsLayout>
#include <QLegend>
#include <QToolTip>
#include <QVBarModelMapper>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace ckpt {

namespace {

QString number(double value)
{
    return QString::number(value, 'g', 5);
}

} // namespace

ValuesChartWidget::ValuesChartWidget(QWidget* parent)
    : QWidget(parent)
    , m_model(new HistogramTableModel(this))
    , m_chart(new QChart)
    , m_series(new QBarSeries)
    , m_mapper(new QVBarModelMapper(this))
    , m_bins(new QBarCategoryAxis)
    , m_counts(new QValueAxis)
{
    setObjectName(QStringLiteral("valuesChart"));
    setAccessibleName(tr("Histogram of the tensor's finite values"));

    m_chart->addSeries(m_series);
    m_chart->addAxis(m_bins, Qt::AlignBottom);
    m_chart->addAxis(m_counts, Qt::AlignLeft);
    m_series->attachAxis(m_bins);
    m_series->attachAxis(m_counts);
    m_series->setBarWidth(1.0); // a histogram: bins touch
    m_bins->setLabelsVisible(false); // 64 edges do not fit; the range is in the title
    m_bins->setGridLineVisible(false);
    m_counts->setLabelFormat(QStringLiteral("%.0f"));
    m_counts->setTickCount(3);
    m_counts->setMin(0);
    m_chart->legend()->hide();
    m_chart->setAnimationOptions(QChart::NoAnimation);
    m_chart->setMargins(QMargins(2, 2, 2, 2));
    m_chart->layout()->setContentsMargins(0, 0, 0, 0);
    m_chart->setBackgroundRoundness(0);

    m_mapper->setFirstBarSetColumn(HistogramTableModel::CountColumn);
    m_mapper->setLastBarSetColumn(HistogramTableModel::CountColumn);
    m_mapper->setFirstRow(0);
    m_mapper->setSeries(m_series);
    m_mapper->setModel(m_model);
    // The mapper does not follow resets: hand it the model again, then fix axes and colours.
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        m_mapper->setModel(m_model);
        refresh();
    });

    m_view = new QChartView(m_chart, this);
    m_view->setRenderHint(QPainter::Antialiasing);
    m_view->setMinimumHeight(80);
    m_view->setAccessibleName(tr("Histogram of the tensor's finite values"));
    m_view->setToolTip(tr("How the finite values spread between their minimum and maximum, in equal bins "
                          "(NaN and ±Inf are counted above, not here)"));

    connect(m_series, &QBarSeries::hovered, this, [this](bool inside, int bin, QBarSet*) {
        if (!inside) {
            QToolTip::hideText();
            return;
        }
        QToolTip::showText(
            QCursor::pos(), m_model->data(m_model->index(bin, 0), Qt::ToolTipRole).toString(), m_view);
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view);
    restyle();
    refresh();
}

ValuesChartWidget::~ValuesChartWidget() = default;

void ValuesChartWidget::setHistogram(double low, double high, std::vector<std::uint64_t> counts)
{
    m_model->setHistogram(low, high, std::move(counts));
}

void ValuesChartWidget::clear()
{
    m_model->setHistogram(0, 0, {});
}

void ValuesChartWidget::refresh()
{
    QStringList categories;
    for (int bin = 0; bin < m_model->rowCount(); ++bin)
        categories.append(m_model->headerData(bin, Qt::Vertical).toString());
    m_bins->setCategories(categories);
    m_counts->setRange(0, std::max<double>(1.0, double(m_model->maximumCount()) * 1.05));
    m_chart->setTitle(m_model->rowCount() == 0
            ? tr("No finite values")
            : tr("%1 … %2").arg(number(m_model->low()), number(m_model->high())));
    restyle();
}

void ValuesChartWidget::restyle()
{
    const QPalette colours = palette();
    m_chart->setBackgroundBrush(colours.color(QPalette::Base));
    m_chart->setTitleBrush(colours.color(QPalette::Text));
    QFont title = font();
    title.setPointSizeF(title.pointSizeF() * 0.9);
    m_chart->setTitleFont(title);
    m_counts->setLabelsBrush(colours.color(QPalette::Text));
    m_counts->setGridLineColor(colours.color(QPalette::Mid));
    m_bins->setLinePenColor(colours.color(QPalette::Mid));
    m_counts->setLinePenColor(colours.color(QPalette::Mid));
    const auto sets = m_series->barSets();
    for (QBarSet* set : sets) {
        set->setColor(colours.color(QPalette::Highlight));
        set->setBorderColor(colours.color(QPalette::Highlight).darker(130));
    }
}

void ValuesChartWidget::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        restyle();
}

} // namespace ckpt
