// SPDX-License-Identifier: MIT
#include "ui/widgets/memorychartwidget.h"

#include "core/base/textformat.h"
#include "ui/models/devicemodel.h"
#include "ui/models/memorytablemodel.h"

#include <QBarCategoryAxis>

#include <QBarSeries>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QDragEnterEvent>
#include <QGraphicsLayout>
#include <QGraphicsRectItem>
#include <QIdentityProxyModel>
#include <QLabel>
#include <QLegend>
#include <QLogValueAxis>
#include <QMimeData>
#include <QToolTip>
#include <QVBarModelMapper>
#include <QVBoxLayout>
#include <algorithm>

#include <cmath>

namespace ckpt {

// The chart's view, taking drops of tensors and modules onto a device's bars.
class MemoryChartView : public QChartView {
public:
    MemoryChartView(QChart* chart, MemoryChartWidget* owner)
        : QChartView(chart)
        , m_owner(owner)
    {
        setAcceptDrops(true);
        viewport()->setAcceptDrops(true);
    }

protected:
    bool accepts(QDropEvent* event) const
    {
        return event->mimeData()->hasFormat(QString::fromLatin1(kPlacementMimeType))
            && !m_owner->tagAt(event->position().toPoint()).isEmpty();
    }
    void dragEnterEvent(QDragEnterEvent* event) override
    {
        // Accepted anywhere over the chart, so that the move events follow the pointer to a bar.
        if (event->mimeData()->hasFormat(QString::fromLatin1(kPlacementMimeType))) {
            event->acceptProposedAction();
            m_owner->highlightCategory(m_owner->tagAt(event->position().toPoint()));
        } else {
            event->ignore();
        }
    }
    void dragMoveEvent(QDragMoveEvent* event) override
    {
        const QString tag = m_owner->tagAt(event->position().toPoint());
        m_owner->highlightCategory(tag);
        if (accepts(event))
            event->acceptProposedAction();
        else
            event->ignore();
    }
    void dragLeaveEvent(QDragLeaveEvent* event) override
    {
        m_owner->highlightCategory({});
        event->accept();
    }
    void dropEvent(QDropEvent* event) override
    {
        m_owner->highlightCategory({});
        if (accepts(event) && m_owner->dropOn(event->position().toPoint(), event->mimeData()))
            event->acceptProposedAction();
        else
            event->ignore();
    }

private:
    MemoryChartWidget* m_owner;
};

namespace {

enum SetIndex { RecordedSet, PlannedSet, ContextSet, CapacitySet };

QString setLabel(int column)
{
    switch (column) {
    case MemoryTableModel::RecordedColumn:
        return MemoryChartWidget::tr("Recorded");
    case MemoryTableModel::PlannedColumn:
        return MemoryChartWidget::tr("Planned");
    case MemoryTableModel::ContextColumn:
        return MemoryChartWidget::tr("CUDA context (assumed)");
    case MemoryTableModel::CapacityColumn:
        return MemoryChartWidget::tr("Capacity");
    default:
        return {};
    }
}

// The table's headers carry units; the legend names the series (the axis gives the unit). Bar
// sets take their labels from the model: relabelling a set makes the mapper rebuild every set.
// On the log axis a zero would lie infinitely far down: cells below the axis floor are shown at
// the floor, an empty bar.
class LegendLabels : public QIdentityProxyModel {
public:
    using QIdentityProxyModel::QIdentityProxyModel;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override
    {
        if (orientation == Qt::Horizontal && role == Qt::DisplayRole)
            return setLabel(section);
        return QIdentityProxyModel::headerData(section, orientation, role);
    }
    QVariant data(const QModelIndex& index, int role) const override
    {
        QVariant value = QIdentityProxyModel::data(index, role);
        if (role == Qt::DisplayRole && value.canConvert<double>())
            return std::max(value.toDouble(), m_floor);
        return value;
    }
    void setFloor(double floor)
    {
        if (floor == m_floor)
            return;
        m_floor = floor;
        if (rowCount() > 0)
            Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
    }

private:
    double m_floor = 0.0;
};

// "1 KiB", "32 MiB": a power of 32 bytes as the axis names it.
QString byteAxisLabel(double bytes)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int unit = 0;
    while (bytes >= 1024.0 && unit < 5) {
        bytes /= 1024.0;
        ++unit;
    }
    return QStringLiteral("%1 %2").arg(bytes, 0, 'g', 4).arg(QLatin1String(units[unit]));
}

bool isDark(const QPalette& palette)
{
    return palette.color(QPalette::Base).lightness() <= 128;
}

} // namespace

MemoryChartWidget::MemoryChartWidget(CheckpointDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_model(new MemoryTableModel(document, this))
    , m_chart(new QChart)
    , m_series(new QBarSeries)
    , m_mapper(new QVBarModelMapper(this))
    , m_categories(new QBarCategoryAxis)
    , m_values(new QLogValueAxis)
    , m_byteLabels(new QCategoryAxis)
{
    setAccessibleName(tr("Memory chart"));
    setAccessibleDescription(tr("Bytes per device as recorded and as planned, against capacity"));

    m_chart->setTitle(tr("Memory per device"));
    m_chart->addSeries(m_series);
    m_chart->addAxis(m_categories, Qt::AlignBottom);
    m_chart->addAxis(m_values, Qt::AlignLeft);
    // The log axis places the bars; its own labels would read 1e+06. Beside it, on the same scale
    // (log10 of the value), a second axis names the sizes in bytes: 1 KiB, 32 KiB, 1 MiB…
    m_values->setLabelsVisible(false);
    m_byteLabels->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    m_byteLabels->setGridLineVisible(false);
    m_chart->addAxis(m_byteLabels, Qt::AlignLeft);
    m_series->attachAxis(m_categories);
    m_series->attachAxis(m_values);
    m_series->setBarWidth(0.8);
    // A log scale: a checkpoint of megabytes and GPUs of gigabytes both show in full.
    m_values->setBase(10);
    m_values->setLabelFormat(QStringLiteral("%g"));
    m_chart->legend()->setAlignment(Qt::AlignBottom);
    m_chart->setAnimationOptions(QChart::NoAnimation); // every drop shows at once
    m_chart->setMargins(QMargins(4, 4, 4, 4));
    m_chart->layout()->setContentsMargins(0, 0, 0, 0);
    m_chart->setBackgroundRoundness(0);

    // Bars read the table through the mapper: a move updates values in place (dataChanged).
    m_mapper->setFirstBarSetColumn(MemoryTableModel::RecordedColumn);
    m_mapper->setLastBarSetColumn(MemoryTableModel::CapacityColumn);
    m_mapper->setFirstRow(0);
    m_mapper->setSeries(m_series);
    auto* legendLabels = new LegendLabels(this);
    m_floorModel = legendLabels;
    legendLabels->setSourceModel(m_model);
    m_mapper->setModel(legendLabels);
    // The mapper does not follow resets (a new target machine): hand it the model again.
    connect(legendLabels, &QAbstractItemModel::modelReset, this,
        [this, legendLabels] { m_mapper->setModel(legendLabels); });
    connect(m_model, &MemoryTableModel::refreshed, this, &MemoryChartWidget::refresh);

    m_dropHighlight = new QGraphicsRectItem(m_chart);
    m_dropHighlight->setPen(Qt::NoPen);
    m_dropHighlight->setZValue(-1);
    m_dropHighlight->hide();

    m_view = new MemoryChartView(m_chart, this);
    m_view->setRenderHint(QPainter::Antialiasing);
    m_view->setAccessibleName(tr("Memory per device"));
    m_view->setToolTip(
        tr("Per device: Recorded, what the file says now; Planned, what will land on the device "
           "when the saved copy is loaded;\nthe CUDA context torch's runtime takes on every GPU it "
           "touches (an assumption); and the device's capacity.\n"
           "Drop tensors or modules onto a device's bars to plan them there."));

    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    m_note->setTextFormat(Qt::PlainText);
    m_note->setContentsMargins(8, 2, 8, 4);

    // Exact sizes on hover: a checkpoint of megabytes is a sliver next to gigabytes of capacity.
    connect(m_series, &QBarSeries::hovered, this, [this](bool inside, int row, QBarSet* set) {
        if (!inside) {
            QToolTip::hideText();
            return;
        }
        const int column = int(m_series->barSets().indexOf(set));
        const QModelIndex cell = m_model->index(row, column);
        if (!cell.isValid())
            return;
        const std::uint64_t bytes = m_model->data(cell, MemoryTableModel::BytesRole).toULongLong();
        QString text = tr("%1, %2: %3 (%4 bytes)")
                           .arg(m_model->tagAt(row), setLabel(column), formatByteSize(bytes),
                               QString::fromStdString(formatThousands(bytes)));
        if (column == MemoryTableModel::PlannedColumn && m_model->overCapacity(row))
            text += tr(" (over capacity)");
        QToolTip::showText(QCursor::pos(), text, m_view);
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_view, 1);
    layout->addWidget(m_note);

    restyle();
    refresh();
}

MemoryChartWidget::~MemoryChartWidget() = default;

void MemoryChartWidget::setDocument(CheckpointDocument* document)
{
    m_model->setDocument(document);
}

QChartView* MemoryChartWidget::chartView() const
{
    return m_view;
}

void MemoryChartWidget::refresh()
{
    QStringList tags;
    for (int row = 0; row < m_model->rowCount(); ++row)
        tags.append(m_model->overCapacity(row) ? m_model->tagAt(row) + tr(" (over)") : m_model->tagAt(row));
    if (m_categories->categories() != tags) {
        m_categories->clear();
        m_categories->append(tags);
    }
    // One axis for every bar, in full: a log scale from the power below the smallest non-zero cell
    // to the power above the largest (the demo: 0.1 MiB of tensors, 32 GiB of CPU). In MiB, or GiB
    // past 100 GiB; ticks every decade, or every second one when there are many (the labels must
    // not crowd a short chart).
    double smallestBytes = 0.0;
    double largestBytes = 0.0;
    for (int row = 0; row < m_model->rowCount(); ++row)
        for (int column = 0; column < MemoryTableModel::ColumnCount; ++column) {
            const double bytes
                = double(m_model->index(row, column).data(MemoryTableModel::BytesRole).toULongLong());
            if (bytes <= 0)
                continue;
            smallestBytes = smallestBytes == 0.0 ? bytes : std::min(smallestBytes, bytes);
            largestBytes = std::max(largestBytes, bytes);
        }
    constexpr double kMiB = 1024.0 * 1024.0;
    constexpr double kGiB = 1024.0 * kMiB;
    const bool gib = largestBytes >= 100 * kGiB;
    const double unit = gib ? kGiB : kMiB;
    m_model->setUnit(unit, gib ? QStringLiteral("GiB") : QStringLiteral("MiB"));
    const double smallest = smallestBytes / unit;
    const double largest = largestBytes * 1.05 / unit;
    const double decades = smallest > 0 ? std::log10(largest) - std::log10(smallest) : 0.0;
    const double base = decades > 6 ? 100.0 : 10.0;
    const auto power = [base](double exponent) { return std::pow(base, exponent); };
    const double low = smallest > 0 ? power(std::floor(std::log(smallest) / std::log(base))) : 0.1;
    const double high = largest > 0 ? power(std::ceil(std::log(largest) / std::log(base))) : 10.0;
    m_values->setBase(base);
    m_values->setRange(low, std::max(high, low * base));
    static_cast<LegendLabels*>(m_floorModel)->setFloor(low);
    m_values->setTitleText(gib ? tr("GiB, log scale") : tr("MiB, log scale"));
    m_values->setTitleVisible(false);
    // The byte labels: powers of 32 bytes inside the range (1 B, 32 B, 1 KiB, 32 KiB, 1 MiB…),
    // at log10 of its value in the unit, which is where the log axis puts that value.
    const double top = std::max(high, low * base);
    for (const QString& label : m_byteLabels->categoriesLabels())
        m_byteLabels->remove(label);
    m_byteLabels->setRange(std::log10(low), std::log10(top));
    // Over a wide range (a GPU server's terabytes beside a kilobyte) every power of 1024 only:
    // labels closer than a line apart would be cut to "…".
    const double span = std::log(top / low) / std::log(32.0);
    const double step = span > 6.0 ? 1024.0 : 32.0;
    for (double bytes = 1.0; bytes / unit <= top * 1.0001; bytes *= step)
        if (bytes / unit >= low * 0.9999)
            m_byteLabels->append(byteAxisLabel(bytes), std::log10(bytes / unit));
    m_byteLabels->setTitleText(tr("Bytes, log scale"));

    restyle();
    const QList<QBarSet*> sets = m_series->barSets();
    // Over capacity: the planned and context bars in the warning colour (QBarSet colours single
    // bars through selection), and the device's label says so.
    for (const int set : {int(PlannedSet), int(ContextSet)}) {
        if (set >= sets.size())
            continue;
        for (int row = 0; row < m_model->rowCount(); ++row)
            sets[set]->setBarSelected(row, m_model->overCapacity(row));
    }

    QString note;
    if (m_model->document()) {
        const std::uint64_t context = m_model->document()->ledger().assumptions().cudaContextBytes;
        QStringList measured;
        for (const auto& [tag, bytes] : m_model->document()->target().measuredContextBytes)
            measured.append(QStringLiteral("%1 %2").arg(QString::fromStdString(tag), formatByteSize(bytes)));
        note = measured.isEmpty()
            ? tr("Red: over capacity. CUDA context: %1 assumed on every GPU that receives storages "
                 "(not a measurement). Hover a bar for exact bytes.")
                  .arg(formatByteSize(context))
            : tr(
                "Red: over capacity. CUDA context measured on this machine: %1; %2 assumed on any other GPU. "
                "Hover a bar for exact bytes.")
                  .arg(measured.join(QStringLiteral(", ")), formatByteSize(context));
    }
    m_note->setText(note);
}

void MemoryChartWidget::restyle()
{
    const QPalette palette = this->palette();
    const bool dark = isDark(palette);
    const QColor text = palette.color(QPalette::WindowText);
    QColor grid = palette.color(QPalette::Mid);
    grid.setAlpha(dark ? 110 : 90);

    m_chart->setBackgroundBrush(palette.color(QPalette::Base));
    m_chart->setBackgroundPen(Qt::NoPen);
    m_chart->setPlotAreaBackgroundVisible(false);
    m_chart->setTitleBrush(text);
    m_chart->legend()->setLabelColor(text);
    for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(m_categories),
             static_cast<QAbstractAxis*>(m_values), static_cast<QAbstractAxis*>(m_byteLabels)}) {
        axis->setLabelsColor(text);
        axis->setTitleBrush(text);
        axis->setLinePenColor(palette.color(QPalette::Mid));
        axis->setGridLineColor(grid);
    }
    m_categories->setGridLineVisible(false);

    QColor highlight = palette.color(QPalette::Highlight);
    highlight.setAlpha(50);
    m_dropHighlight->setBrush(highlight);

    const QList<QBarSet*> sets = m_series->barSets();
    const QColor recorded = dark ? QColor(0x9e, 0x9e, 0x9e) : QColor(0x90, 0xa4, 0xae);
    const QColor planned = dark ? QColor(0x64, 0xb5, 0xf6) : QColor(0x1e, 0x63, 0xb5);
    const QColor context = dark ? QColor(0xff, 0xb7, 0x4d) : QColor(0xe6, 0x7e, 0x00);
    for (int i = 0; i < sets.size(); ++i) {
        QBarSet* set = sets[i];
        switch (i) {
        case RecordedSet:
            set->setBrush(recorded);
            set->setPen(QPen(recorded.darker(dark ? 100 : 120), 1));
            break;
        case PlannedSet:
            set->setBrush(planned);
            set->setPen(QPen(planned.darker(dark ? 100 : 120), 1));
            set->setSelectedColor(overCapacityColor(palette));
            break;
        case ContextSet:
            // Hatched: an assumption, not bytes of the checkpoint.
            set->setBrush(QBrush(context, Qt::BDiagPattern));
            set->setPen(QPen(context, 1.5));
            set->setSelectedColor(overCapacityColor(palette));
            break;
        case CapacitySet:
            set->setBrush(dark ? QColor(0xff, 0xff, 0xff, 30) : QColor(0, 0, 0, 18));
            set->setPen(QPen(text, 1.5, Qt::DashLine));
            break;
        default:
            break;
        }
        set->setLabelColor(text);
    }
    QPalette notePalette = m_note->palette();
    QColor noteText = text;
    noteText.setAlphaF(0.75f);
    notePalette.setColor(QPalette::WindowText, noteText);
    m_note->setPalette(notePalette);
}

void MemoryChartWidget::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && m_chart)
        restyle();
}

QString MemoryChartWidget::tagAt(const QPoint& position) const
{
    const int count = m_model->rowCount();
    if (count == 0)
        return {};
    const QPointF inChart = m_chart->mapFromScene(m_view->mapToScene(position));
    const QRectF plot = m_chart->plotArea();
    // A device's column: its bars, the space above them, and its label below the plot.
    if (inChart.x() < plot.left() || inChart.x() > plot.right() || inChart.y() < plot.top())
        return {};
    const double x = m_chart->mapToValue(inChart, m_series).x();
    const int row = int(std::lround(x));
    if (row < 0 || row >= count || std::abs(x - row) > 0.5)
        return {};
    return m_model->tagAt(row);
}

QPoint MemoryChartWidget::categoryCenter(const QString& tag) const
{
    const int row = m_model->rowOfTag(tag);
    if (row < 0)
        return {};
    const QRectF plot = m_chart->plotArea();
    QPointF inChart = m_chart->mapToPosition(QPointF(row, 0), m_series);
    inChart.setY(plot.center().y());
    return m_view->mapFromScene(m_chart->mapToScene(inChart));
}

void MemoryChartWidget::highlightCategory(const QString& tag)
{
    const int row = tag.isEmpty() ? -1 : m_model->rowOfTag(tag);
    if (row < 0) {
        m_dropHighlight->hide();
        return;
    }
    const QRectF plot = m_chart->plotArea();
    const double left = m_chart->mapToPosition(QPointF(row - 0.5, 0), m_series).x();
    const double right = m_chart->mapToPosition(QPointF(row + 0.5, 0), m_series).x();
    m_dropHighlight->setRect(QRectF(left, plot.top(), right - left, plot.height()));
    m_dropHighlight->show();
}

bool MemoryChartWidget::dropOn(const QPoint& position, const QMimeData* data)
{
    const std::optional<MoveReport> report
        = DeviceModel::dropOnDevice(m_model->document(), data, tagAt(position));
    if (!report)
        return false;
    Q_EMIT moved(report->text);
    return true;
}

} // namespace ckpt
