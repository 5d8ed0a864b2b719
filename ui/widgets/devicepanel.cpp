#include "ui/widgets/devicepanel.h"

#include "ui/models/devicemodel.h"
#include "ui/widgets/devicecolors.h"

#include <QLabel>
#include <QListView>
#include <QPainter>
#include <QPainterPath>
#include <QResizeEvent>
#include <QStyledItemDelegate>
#include <QVBoxLayout>

namespace ckpt {

namespace {

constexpr int kPadding = 8;
constexpr int kSwatchWidth = 6;
constexpr int kBarHeight = 12;
constexpr int kMinimumCardWidth = 300;
constexpr int kSpacing = 6;

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

// Cards fill the view's width: as many columns of at least kMinimumCardWidth as fit. QListView
// keeps room for a vertical scroll bar when it wraps, and puts the spacing around every item.
int cardWidth(const QAbstractItemView* view)
{
    const int scrollBar = view->style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, view);
    const int available = std::max(kMinimumCardWidth, view->viewport()->width() - scrollBar - kSpacing);
    const int columns = std::max(1, available / (kMinimumCardWidth + kSpacing));
    return available / columns - kSpacing - 2;
}

// Draws one device card: swatch, tag and name, capacity, the bar of planned bytes (the assumed
// CUDA context hatched after them) against the capacity, and the numbers in words.
class DeviceCardDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex&) const override
    {
        const QFontMetrics bold(boldFont(option.font));
        const QFontMetrics small(smallerFont(option.font));
        const int height = kPadding + bold.height() + 6 + kBarHeight + 6 + 2 * small.height() + 2 + kPadding;
        const auto* view = qobject_cast<const QAbstractItemView*>(option.widget);
        return {view ? cardWidth(view) : kMinimumCardWidth, height};
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
        const std::uint64_t recorded = index.data(DeviceModel::RecordedBytesRole).toULongLong();
        const std::uint64_t context = index.data(DeviceModel::ContextBytesRole).toULongLong();
        const std::uint64_t storages = index.data(DeviceModel::StorageCountRole).toULongLong();
        const qint64 headroom = index.data(DeviceModel::HeadroomRole).toLongLong();
        const bool over = index.data(DeviceModel::OverCapacityRole).toBool();
        const bool inTarget = index.data(DeviceModel::InTargetRole).toBool();
        const QColor deviceColour = deviceColor(tag);
        const QColor warning = overCapacityColor(palette);
        const bool selected = option.state & QStyle::State_Selected;
        const bool hovered = option.state & QStyle::State_MouseOver;

        // The card.
        const QRectF card = QRectF(option.rect).adjusted(1.5, 1.5, -1.5, -1.5);
        QColor background = palette.color(QPalette::Base);
        if (hovered)
            background = palette.color(QPalette::AlternateBase);
        QColor border = over ? warning : palette.color(QPalette::Mid);
        if (selected)
            border = palette.color(QPalette::Highlight);
        painter->setPen(QPen(border, selected || over ? 2.0 : 1.0));
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
        const QString capacityText
            = capacityValue.isValid() ? formatByteSize(capacityValue.toULongLong()) : tr("capacity unknown");
        painter->setPen(text);
        const int capacityWidth = boldMetrics.horizontalAdvance(capacityText);
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
        painter->setFont(boldFont(option.font));
        const int nameLeft = line.left() + tagWidth + plainMetrics.horizontalAdvance(QLatin1Char(' ')) * 2;
        const int nameWidth = line.right() - capacityWidth - 8 - nameLeft;
        QString nameText = name;
        if (!inTarget)
            nameText = tr("not on the target machine");
        if (nameWidth > 20) {
            painter->setFont(option.font);
            painter->setPen(dimText);
            painter->drawText(QRect(nameLeft, line.top(), nameWidth, line.height()),
                Qt::AlignLeft | Qt::AlignVCenter,
                plainMetrics.elidedText(nameText, Qt::ElideRight, nameWidth));
        }

        // Line 2: the bar. Its scale is the capacity, or what is planned when that exceeds it (the
        // part past the capacity mark is what does not fit).
        const QRectF bar(content.left(), line.bottom() + 7, content.width(), kBarHeight);
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
        const double plannedWidth = bar.width() * double(planned) / scale;
        const double contextWidth = bar.width() * double(context) / scale;
        QRectF plannedRect(bar.left(), bar.top(), plannedWidth, bar.height());
        painter->fillRect(plannedRect, over ? warning : deviceColour);
        if (context) {
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

        // Lines 3 and 4: the numbers in words.
        const QFont small = smallerFont(option.font);
        painter->setFont(small);
        const QFontMetrics smallMetrics = painter->fontMetrics();
        QRect words(content.left(), int(bar.bottom()) + 7, content.width(), smallMetrics.height());
        QString plannedText = tr("%1 planned · %2 %3")
                                  .arg(formatByteSize(planned))
                                  .arg(storages)
                                  .arg(storages == 1 ? tr("storage") : tr("storages"));
        const QString recordedText = tr("recorded %1").arg(formatByteSize(recorded));
        painter->setPen(text);
        const int recordedWidth = smallMetrics.horizontalAdvance(recordedText);
        const bool recordedFits
            = smallMetrics.horizontalAdvance(plannedText) + recordedWidth + 12 <= words.width();
        painter->drawText(words, Qt::AlignLeft | Qt::AlignVCenter,
            smallMetrics.elidedText(plannedText, Qt::ElideRight,
                recordedFits ? words.width() - recordedWidth - 12 : words.width()));
        if (recordedFits) {
            painter->setPen(dimText);
            painter->drawText(words, Qt::AlignRight | Qt::AlignVCenter, recordedText);
        }

        words.translate(0, smallMetrics.height() + 2);
        QString state;
        if (capacity > 0)
            state = over ? tr("over by %1").arg(formatByteSize(std::uint64_t(-headroom)))
                         : tr("%1 free").arg(formatByteSize(std::uint64_t(headroom)));
        const int stateWidth = state.isEmpty() ? 0 : smallMetrics.horizontalAdvance(state);
        if (context) {
            painter->setPen(dimText);
            const QString hint = tr("+ context %1 (assumed)").arg(formatByteSize(context));
            painter->drawText(words, Qt::AlignLeft | Qt::AlignVCenter,
                smallMetrics.elidedText(hint, Qt::ElideRight, words.width() - stateWidth - 12));
        }
        if (!state.isEmpty()) {
            QFont stateFont = small;
            stateFont.setBold(over);
            painter->setFont(stateFont);
            painter->setPen(over ? warning : dimText);
            painter->drawText(words, Qt::AlignRight | Qt::AlignVCenter, state);
        }
        painter->restore();
    }
};

// Relays out the cards when the width changes, so they keep filling it.
class DeviceCardView : public QListView {
public:
    using QListView::QListView;

protected:
    void resizeEvent(QResizeEvent* event) override
    {
        QListView::resizeEvent(event);
        if (event->oldSize().width() != event->size().width())
            scheduleDelayedItemsLayout();
    }
};

} // namespace

DevicePanel::DevicePanel(CheckpointDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_model(new DeviceModel(document, this))
    , m_view(new DeviceCardView(this))
{
    setAccessibleName(tr("Devices"));
    setAccessibleDescription(
        tr("One card per device; drop tensors or modules onto a card to plan them there"));
    m_view->setAccessibleName(tr("Device cards"));
    m_view->setToolTip(tr("Drop tensors or modules onto a device to plan where they load.\n"
                          "Planned: what will land on this device when the saved copy is loaded; "
                          "recorded: what the file says now."));
    m_view->setModel(m_model);
    m_view->setItemDelegate(new DeviceCardDelegate(m_view));
    m_view->setViewMode(QListView::ListMode);
    m_view->setFlow(QListView::LeftToRight);
    m_view->setWrapping(true);
    m_view->setResizeMode(QListView::Adjust);
    m_view->setSpacing(kSpacing / 2);
    m_view->setMovement(QListView::Static);
    m_view->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
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
}

bool DevicePanel::isDetecting() const
{
    return !m_detectingLabel->isHidden();
}

} // namespace ckpt
