// SPDX-License-Identifier: MIT
#include "ui/widgets/devicepanel.h"

#include "ui/base/devicecolors.h"
#include "ui/models/devicemodel.h"

#include "core/base/textformat.h"
#include "core/triage/triage.h"

#include <QHelpEvent>
#include <QLabel>
#include <QListView>
#include <QPainter>
#include <QPainterPath>
#include <QResizeEvent>
#include <QStyledItemDelegate>
#include <QToolTip>
#include <QVBoxLayout>

namespace ckpt {

namespace {

constexpr int kPadding = 6;
constexpr int kSwatchWidth = 6;
constexpr int kBarHeight = 9;
// Narrow enough that two columns fit beside the tree at 1280 px and four at 1920: eight devices
// then need four rows at most, which the panel shows without scrolling.
constexpr int kMinimumCardWidth = 230; // comfortable: the planned bytes and storages in words
constexpr int kCompactCardWidth = 170; // narrower still, when that is what keeps every card in view
constexpr int kSpacing = 6;
constexpr int kMostRowsShown = 4; // past that the panel scrolls, so the chart keeps its room

QFont smallerFont(QFont font)
{
    if (font.pointSizeF() > 0)
        font.setPointSizeF(font.pointSizeF() * 0.9);
    else
        font.setPixelSize(std::max(9, font.pixelSize() * 9 / 10));
    return font;
}

QFont boldFont(QFont font)
{
    font.setBold(true);
    return font;
}

// Columns for `count` cards in `width`: as many comfortable ones as fit, more (down to compact
// cards) when that is what it takes to show every card in kMostRowsShown rows.
int columnsFor(int width, int count)
{
    const int comfortable = std::max(1, (width - kSpacing) / (kMinimumCardWidth + kSpacing));
    const int most = std::max(1, (width - kSpacing) / (kCompactCardWidth + kSpacing));
    const int needed = (count + kMostRowsShown - 1) / kMostRowsShown;
    return std::clamp(std::max(comfortable, needed), 1, most);
}

// Room a vertical scroll bar takes: always kept, so the cards do not re-wrap while one comes and
// goes during a layout (the panel is sized to need none up to kMostRowsShown rows).
int scrollBarRoom(const QWidget* view)
{
    return view->style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, view);
}

// Cards fill the view's width: as many columns of at least kMinimumCardWidth as fit.
int cardWidth(const QAbstractItemView* view)
{
    const int available = std::max(kCompactCardWidth, view->width() - scrollBarRoom(view) - kSpacing);
    const int columns = columnsFor(available + kSpacing, view->model() ? view->model()->rowCount() : 1);
    return std::max(kCompactCardWidth, available / columns - kSpacing - 1);
}

int cardHeight(const QFont& font)
{
    const QFontMetrics bold(boldFont(font));
    const QFontMetrics small(smallerFont(font));
    return kPadding + bold.height() + 4 + kBarHeight + 4 + small.height() + kPadding;
}

// Draws one device card: swatch, tag and name, capacity, the bar of planned bytes (the assumed
// CUDA context hatched after them) against the capacity, and one line of numbers: planned bytes
// and headroom, or for a device the target lacks, what torch.load would do with what is on it.
class DeviceCardDelegate : public QStyledItemDelegate {
public:
    DeviceCardDelegate(const QHash<QString, QString>* absentOutcomes, QObject* parent)
        : QStyledItemDelegate(parent)
        , m_absentOutcomes(absentOutcomes)
    { }

    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex&) const override
    {
        const auto* view = qobject_cast<const QAbstractItemView*>(option.widget);
        return {view ? cardWidth(view) : kMinimumCardWidth, cardHeight(option.font)};
    }

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override
    {
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing);
        const QPalette& palette = option.palette;
        const QString tag = index.data(DeviceModel::TagRole).toString();
        const QString name = index.data(DeviceModel::NameRole).toString();
        const QVariant capacityValue = index.data(DeviceModel::CapacityRole);
        const std::uint64_t planned = index.data(DeviceModel::PlannedBytesRole).toULongLong();
        const std::uint64_t context = index.data(DeviceModel::ContextBytesRole).toULongLong();
        const std::uint64_t storages = index.data(DeviceModel::StorageCountRole).toULongLong();
        const qint64 headroom = index.data(DeviceModel::HeadroomRole).toLongLong();
        const bool over = index.data(DeviceModel::OverCapacityRole).toBool();
        const bool inTarget = index.data(DeviceModel::InTargetRole).toBool();
        const bool noDevice = index.data(DeviceModel::RecordsNoDeviceRole).toBool();
        const QColor deviceColour = deviceColor(tag);
        const QColor warning = overCapacityColor(palette);
        const bool selected = option.state & QStyle::State_Selected;
        const bool hovered = option.state & QStyle::State_MouseOver;
        const bool absentWithBytes = !inTarget && !noDevice && planned > 0;

        // The card.
        const QRectF card = QRectF(option.rect).adjusted(1.5, 1.5, -1.5, -1.5);
        QColor background = palette.color(QPalette::Base);
        if (hovered)
            background = palette.color(QPalette::AlternateBase);
        QColor border = over || absentWithBytes ? warning : palette.color(QPalette::Mid);
        if (selected)
            border = palette.color(QPalette::Highlight);
        painter->setPen(QPen(border, selected || over || absentWithBytes ? 2.0 : 1.0,
            inTarget ? Qt::SolidLine : Qt::DashLine));
        painter->setBrush(background);
        painter->drawRoundedRect(card, 6, 6);

        // The swatch: the device's colour, as the tree colours rows planned onto it.
        QPainterPath swatch;
        swatch.addRoundedRect(
            QRectF(card.left() + 1, card.top() + 1, kSwatchWidth + 4, card.height() - 2), 5, 5);
        painter->save();
        painter->setClipRect(QRectF(card.left(), card.top(), kSwatchWidth + 1, card.height()));
        painter->fillPath(swatch, deviceColour);
        painter->restore();

        const QRect content
            = option.rect.adjusted(kSwatchWidth + kPadding + 2, kPadding, -kPadding, -kPadding);
        const QColor text = palette.color(QPalette::Text);
        QColor dimText = text;
        dimText.setAlphaF(0.7f);

        // Line 1: tag, name, capacity.
        // Metrics from the painter: a grab or a high-DPI screen may resolve fonts differently.
        painter->setFont(boldFont(option.font));
        const QFontMetrics boldMetrics = painter->fontMetrics();
        const QString capacityText = capacityValue.isValid() ? formatByteSize(capacityValue.toULongLong())
            : inTarget                                       ? tr("capacity unknown")
                                                             : QString();
        painter->setPen(text);
        const int capacityWidth = capacityText.isEmpty() ? 0 : boldMetrics.horizontalAdvance(capacityText);
        QRect line(content.left(), content.top(), content.width(), boldMetrics.height());
        painter->drawText(line, Qt::AlignRight | Qt::AlignVCenter, capacityText);
        // Room for rounding: elidedText() elides a text given exactly its advance.
        const int tagRoom = line.width() - capacityWidth - 8;
        const int tagAdvance = boldMetrics.horizontalAdvance(tag) + 2;
        const int tagWidth = std::min(tagAdvance, tagRoom);
        painter->drawText(QRect(line.left(), line.top(), tagWidth, line.height()),
            Qt::AlignLeft | Qt::AlignVCenter,
            tagAdvance <= tagRoom ? tag : boldMetrics.elidedText(tag, Qt::ElideRight, tagWidth));
        painter->setFont(option.font);
        const QFontMetrics plainMetrics = painter->fontMetrics();
        const int nameLeft = line.left() + tagWidth + plainMetrics.horizontalAdvance(QLatin1Char(' ')) * 2;
        const int nameWidth = line.right() - capacityWidth - 8 - nameLeft;
        const QString nameText = inTarget ? name
            : noDevice                    ? tr("no device recorded")
                                          : tr("not on the target");
        if (nameWidth > 20) {
            painter->setPen(inTarget || noDevice ? dimText : warning);
            painter->drawText(QRect(nameLeft, line.top(), nameWidth, line.height()),
                Qt::AlignLeft | Qt::AlignVCenter,
                plainMetrics.elidedText(nameText, Qt::ElideRight, nameWidth));
        }

        // Line 2: the bar. Its scale is the capacity, or what is planned when that exceeds it (the
        // part past the capacity mark is what does not fit).
        const QRectF bar(content.left(), line.bottom() + 5, content.width(), kBarHeight);
        const double capacity = capacityValue.isValid() ? double(capacityValue.toULongLong()) : 0.0;
        const double scale = std::max({capacity, double(planned + context), 1.0});
        QColor trough = palette.color(QPalette::Window);
        if (trough == background)
            trough = palette.color(QPalette::Button);
        painter->setPen(QPen(palette.color(QPalette::Mid), 1.0));
        painter->setBrush(trough);
        painter->drawRoundedRect(bar, 3, 3);
        QPainterPath barShape;
        barShape.addRoundedRect(bar, 3, 3);
        painter->save();
        painter->setClipPath(barShape);
        // A sliver still shows: a checkpoint of megabytes on a GPU of gigabytes is not nothing.
        // A device the target lacks has no capacity to fill: its bar stays empty, its words say why.
        const double plannedWidth
            = planned && inTarget ? std::max(2.0, bar.width() * double(planned) / scale) : 0.0;
        const double contextWidth = inTarget ? bar.width() * double(context) / scale : 0.0;
        QRectF plannedRect(bar.left(), bar.top(), plannedWidth, bar.height());
        painter->fillRect(plannedRect, over || absentWithBytes ? warning : deviceColour);
        if (context && inTarget) {
            const QRectF contextRect(plannedRect.right(), bar.top(), contextWidth, bar.height());
            QColor contextColour = over ? warning : deviceColour;
            painter->fillRect(
                contextRect, QColor(contextColour.red(), contextColour.green(), contextColour.blue(), 70));
            painter->fillRect(contextRect, QBrush(contextColour, Qt::BDiagPattern));
        }
        painter->restore();
        if (capacity > 0 && capacity < scale) {
            // The capacity mark on an over-full bar.
            const double x = bar.left() + bar.width() * capacity / scale;
            painter->setPen(QPen(text, 2.0));
            painter->drawLine(QPointF(x, bar.top() - 3), QPointF(x, bar.bottom() + 3));
        }

        // Line 3: the numbers in words.
        const QFont small = smallerFont(option.font);
        painter->setFont(small);
        const QFontMetrics smallMetrics = painter->fontMetrics();
        const QRect words(content.left(), int(bar.bottom()) + 5, content.width(), smallMetrics.height());
        if (noDevice) {
            const QString said = planned == 0
                ? tr("every storage is planned onto a device")
                : tr("%1 the loader places (cpu unless told)").arg(formatByteSize(planned));
            painter->setPen(dimText);
            painter->drawText(words, Qt::AlignLeft | Qt::AlignVCenter,
                smallMetrics.elidedText(said, Qt::ElideRight, words.width()));
            painter->restore();
            return;
        }
        if (!inTarget) {
            const QString outcome = m_absentOutcomes ? m_absentOutcomes->value(tag) : QString();
            const QString said = planned == 0 ? tr("nothing planned here: loads elsewhere")
                : outcome.isEmpty()
                ? tr("%1 planned: torch.load fails").arg(formatByteSize(planned))
                : tr("%1 planned: torch.load raises %2").arg(formatByteSize(planned), outcome);
            painter->setPen(planned == 0 ? dimText : warning);
            painter->drawText(words, Qt::AlignLeft | Qt::AlignVCenter,
                smallMetrics.elidedText(said, Qt::ElideRight, words.width()));
            painter->restore();
            return;
        }
        QString state;
        if (capacity > 0)
            state = over ? tr("over by %1").arg(formatByteSize(std::uint64_t(-headroom)))
                         : tr("%1 free").arg(formatByteSize(std::uint64_t(headroom)));
        const int stateWidth = state.isEmpty() ? 0 : smallMetrics.horizontalAdvance(state) + 10;
        // As many words as the card's width holds; the tooltip has all of them.
        QString plannedText
            = tr("%1 planned · %n storage(s)", nullptr, int(storages)).arg(formatByteSize(planned));
        if (smallMetrics.horizontalAdvance(plannedText) > words.width() - stateWidth)
            plannedText = tr("%1 planned").arg(formatByteSize(planned));
        if (smallMetrics.horizontalAdvance(plannedText) > words.width() - stateWidth)
            plannedText = formatByteSize(planned);
        painter->setPen(text);
        painter->drawText(words, Qt::AlignLeft | Qt::AlignVCenter,
            smallMetrics.elidedText(plannedText, Qt::ElideRight, words.width() - stateWidth));
        if (!state.isEmpty()) {
            QFont stateFont = small;
            stateFont.setBold(over);
            painter->setFont(stateFont);
            painter->setPen(over ? warning : dimText);
            painter->drawText(words, Qt::AlignRight | Qt::AlignVCenter, state);
        }
        painter->restore();
    }

private:
    const QHash<QString, QString>* m_absentOutcomes;
};

// Relays out the cards when the width changes, so they keep filling it, and gives every card a
// tooltip with the exact numbers.
class DeviceCardView : public QListView {
public:
    DeviceCardView(DevicePanel* panel)
        : QListView(panel)
        , m_panel(panel)
    { }

protected:
    void resizeEvent(QResizeEvent* event) override
    {
        QListView::resizeEvent(event);
        if (event->oldSize().width() != event->size().width()) {
            scheduleDelayedItemsLayout();
            m_panel->updateGeometry();
        }
    }
    bool viewportEvent(QEvent* event) override
    {
        if (event->type() == QEvent::ToolTip) {
            const auto* help = static_cast<QHelpEvent*>(event);
            const QModelIndex index = indexAt(help->pos());
            if (index.isValid()) {
                QToolTip::showText(
                    help->globalPos(), m_panel->cardToolTip(index.row()), viewport(), visualRect(index));
                return true;
            }
        }
        return QListView::viewportEvent(event);
    }

private:
    DevicePanel* m_panel;
};

} // namespace

DevicePanel::DevicePanel(CheckpointDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_model(new DeviceModel(document, this))
{
    m_view = new DeviceCardView(this);
    setAccessibleName(tr("Devices"));
    setAccessibleDescription(
        tr("One card per device; drop tensors or modules onto a card to plan them there"));
    m_view->setAccessibleName(tr("Device cards"));
    m_view->setModel(m_model);
    m_view->setItemDelegate(new DeviceCardDelegate(&m_absentOutcomes, m_view));
    m_view->setViewMode(QListView::ListMode);
    m_view->setFlow(QListView::LeftToRight);
    m_view->setWrapping(true);
    m_view->setResizeMode(QListView::Adjust);
    m_view->setSpacing(kSpacing / 2);
    m_view->setMovement(QListView::Static);
    m_view->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_view->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    m_view->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    m_view->setMouseTracking(true);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    // Drops only, and onto a whole card: no "between cards" positions.
    m_view->setDragDropMode(QAbstractItemView::DropOnly);
    m_view->setDragDropOverwriteMode(true);
    m_view->setDropIndicatorShown(true);
    m_view->setAcceptDrops(true);
    m_view->viewport()->setAcceptDrops(true);
    m_view->setDefaultDropAction(Qt::MoveAction);
    m_view->setFrameShape(QFrame::NoFrame);
    m_view->viewport()->setAutoFillBackground(false);

    // Shown while this machine's GPUs are being detected (a job: cuInit can take seconds).
    m_detectingLabel = new QLabel(tr("Detecting GPUs…"), this);
    m_detectingLabel->setObjectName(QStringLiteral("detectingGpusLabel"));
    m_detectingLabel->setForegroundRole(QPalette::PlaceholderText);
    m_detectingLabel->setContentsMargins(4, 2, 4, 2);
    m_detectingLabel->hide();

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(m_detectingLabel);
    layout->addWidget(m_view);

    connect(m_model, &DeviceModel::moved, this, &DevicePanel::moved);
    // The panel's height follows the number of rows of cards; what loading does on an absent
    // device follows the plan and the target.
    connect(m_model, &QAbstractItemModel::modelReset, this, &DevicePanel::refreshFit);
    // What torch raises on an absent device depends on the target and the device only: the rows
    // change (a reset) when either does, not on every move.
    refreshFit();
}

int DevicePanel::heightForWidth(int width) const
{
    const int rows = m_model->rowCount();
    const int columns = columnsFor(width - scrollBarRoom(m_view), rows);
    const int shownRows = std::clamp((rows + columns - 1) / columns, 1, kMostRowsShown);
    int height = shownRows * (cardHeight(m_view->font()) + kSpacing) + kSpacing;
    if (!m_detectingLabel->isHidden())
        height += m_detectingLabel->sizeHint().height();
    return height;
}

QSize DevicePanel::sizeHint() const
{
    const int width = std::max(this->width(), 2 * (kMinimumCardWidth + kSpacing));
    return {width, heightForWidth(width)};
}

QSize DevicePanel::minimumSizeHint() const
{
    return {kCompactCardWidth + 2 * kSpacing, heightForWidth(std::max(width(), kMinimumCardWidth))};
}

void DevicePanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    // Keeps every row of cards in view: the splitter around the panel reads these bounds.
    const int wanted = heightForWidth(event->size().width());
    if (minimumHeight() != wanted || maximumHeight() != wanted) {
        setFixedHeight(wanted);
        updateGeometry();
        Q_EMIT heightChanged(wanted);
    }
}

void DevicePanel::refreshFit()
{
    refreshAbsentOutcomes();
    const int wanted = heightForWidth(width());
    setFixedHeight(wanted);
    updateGeometry();
    Q_EMIT heightChanged(wanted);
}

void DevicePanel::refreshAbsentOutcomes()
{
    m_absentOutcomes.clear();
    CheckpointDocument* document = m_model->document();
    if (!document)
        return;
    const Checkpoint& checkpoint = document->checkpoint();
    for (int row = 0; row < m_model->rowCount(); ++row) {
        const QModelIndex index = m_model->index(row);
        if (index.data(DeviceModel::InTargetRole).toBool()
            || index.data(DeviceModel::RecordsNoDeviceRole).toBool())
            continue;
        // What torch 2.6+ says restoring a storage onto that device on the target: every storage
        // sent there by map_location, so the first storage's outcome is the device's.
        MapLocation everything;
        everything.kind = MapLocation::Kind::Device;
        everything.device = m_model->tagAt(row).toStdString();
        const LoadSimulation simulation
            = simulateLoad(checkpoint, document->target(), everything, TorchGeneration::Torch26Plus, false);
        for (const StorageLoadOutcome& outcome : simulation.storages)
            if (!outcome.error.empty()) {
                m_absentOutcomes.insert(m_model->tagAt(row), QString::fromStdString(outcome.error));
                break;
            }
    }
    m_view->viewport()->update();
}

QString DevicePanel::cardToolTip(int row) const
{
    const QModelIndex index = m_model->index(row);
    const QString tag = index.data(DeviceModel::TagRole).toString();
    const auto exact = [](std::uint64_t bytes) {
        return tr("%1 (%2 bytes)").arg(formatByteSize(bytes), QString::fromStdString(formatThousands(bytes)));
    };
    QStringList lines {
        QStringLiteral("<b>%1</b> %2")
            .arg(tag.toHtmlEscaped(), index.data(DeviceModel::NameRole).toString().toHtmlEscaped())};
    lines << tr("Planned: %1").arg(exact(index.data(DeviceModel::PlannedBytesRole).toULongLong()))
          << tr("Recorded in the file: %1")
                 .arg(exact(index.data(DeviceModel::RecordedBytesRole).toULongLong()));
    if (const std::uint64_t context = index.data(DeviceModel::ContextBytesRole).toULongLong())
        lines << tr("CUDA context (assumed): %1").arg(exact(context));
    const QVariant capacity = index.data(DeviceModel::CapacityRole);
    if (capacity.isValid()) {
        lines << tr("Capacity: %1").arg(exact(capacity.toULongLong()));
        const qint64 headroom = index.data(DeviceModel::HeadroomRole).toLongLong();
        lines << (headroom < 0 ? tr("Over capacity by %1").arg(exact(std::uint64_t(-headroom)))
                               : tr("Headroom: %1").arg(exact(std::uint64_t(headroom))));
    }
    if (index.data(DeviceModel::RecordsNoDeviceRole).toBool()) {
        lines << tr("The file records no device for these storages (safetensors, DCP and NumPy files do "
                    "not): the loader places them, safetensors.torch.load_file on cpu unless told.");
        return lines.join(QStringLiteral("<br>"));
    }
    if (!index.data(DeviceModel::InTargetRole).toBool()) {
        lines << tr("The target machine has no %1.").arg(tag.toHtmlEscaped());
        if (const QString outcome = m_absentOutcomes.value(tag); !outcome.isEmpty())
            lines << tr("torch.load of what is planned here raises: %1").arg(outcome.toHtmlEscaped());
    }
    lines << tr("Drop tensors or modules here, or select them and press %1.")
                 .arg(tag == QLatin1String("cpu") ? QStringLiteral("Ctrl+0") : tr("Ctrl+GPU number + 1"));
    return lines.join(QStringLiteral("<br>"));
}

QAbstractItemView* DevicePanel::view() const
{
    return m_view;
}

QRect DevicePanel::cardRect(const QString& tag) const
{
    const int row = m_model->rowOfTag(tag);
    if (row < 0)
        return {};
    return m_view->visualRect(m_model->index(row));
}

void DevicePanel::setDocument(CheckpointDocument* document)
{
    m_model->setDocument(document);
}

void DevicePanel::setDetecting(bool detecting)
{
    m_detectingLabel->setVisible(detecting);
    refreshFit();
}

bool DevicePanel::isDetecting() const
{
    return !m_detectingLabel->isHidden();
}

} // namespace ckpt
