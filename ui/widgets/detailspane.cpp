// SPDX-License-Identifier: MIT
#include "ui/widgets/detailspane.h"

#include "core/model/shardset.h"
#include "ui/document/checkpointdocument.h"
#include "ui/widgets/valueschartwidget.h"

#include "ui/jobs/jobtracker.h"
#include "ui/values/tensorvalues.h"

#include <QEvent>
#include <QLabel>
#include <QSplitter>
#include <QTextBrowser>
#include <QTextDocument>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace ckpt {

namespace {

QString html(const std::string& text)
{
    return QString::fromStdString(text).toHtmlEscaped();
}

QString row(const QString& label, const QString& valueHtml, const QString& tooltip = {})
{
    const QString title
        = tooltip.isEmpty() ? QString() : QStringLiteral(" title=\"%1\"").arg(tooltip.toHtmlEscaped());
    return QStringLiteral(
        "<tr><td style=\"padding-right:12px; white-space:nowrap\"%1><b>%2</b></td><td>%3</td></tr>")
        .arg(title, label.toHtmlEscaped(), valueHtml);
}

QString joinInts(const std::vector<std::int64_t>& values)
{
    QStringList parts;
    parts.reserve(static_cast<qsizetype>(values.size()));
    for (const std::int64_t v : values)
        parts.append(QString::number(v));
    return QLatin1Char('(') + parts.join(QStringLiteral(", "))
        + (values.size() == 1 ? QStringLiteral(",)") : QStringLiteral(")"));
}

QString bytesText(std::uint64_t bytes)
{
    return QStringLiteral("%1 (%2 bytes)")
        .arg(QString::fromStdString(formatBytes(bytes)), QString::fromStdString(formatThousands(bytes)));
}

QString deviceText(const std::optional<std::string>& device)
{
    return device ? html(*device) : QStringLiteral("<i>none recorded</i>");
}

const QString kStorageTip = QStringLiteral(
    "A storage is the block of bytes tensors are views of. A device belongs to a storage: every tensor "
    "viewing it lives where it lives, so moving one moves them all.");
const QString kRecordedTip = QStringLiteral("The device the tensor was on when torch.save wrote the file.");
const QString kPlannedTip
    = QStringLiteral("The device the remapped copy will record, so that torch.load puts it there.");

// The per-file table: file, tensors, bytes (exact bytes in the tooltip), recorded devices.
QString shardTableHtml(
    const Checkpoint& checkpoint, const std::vector<ShardTotal>& totals, const QString& title)
{
    const ShardSet& set = *checkpoint.shardSet;
    QString out = QStringLiteral("<p style=\"margin-top:8px\"><b>%1</b></p>"
                                 "<table cellspacing=\"0\" cellpadding=\"1\"><tr>"
                                 "<th align=\"left\" style=\"padding-right:12px\">%2</th>"
                                 "<th align=\"right\" style=\"padding-right:12px\">%3</th>"
                                 "<th align=\"right\" style=\"padding-right:12px\">%4</th>"
                                 "<th align=\"left\">%5</th></tr>")
                      .arg(title.toHtmlEscaped(), QObject::tr("File").toHtmlEscaped(),
                          QObject::tr("Tensors").toHtmlEscaped(), QObject::tr("Bytes").toHtmlEscaped(),
                          QObject::tr("Recorded devices").toHtmlEscaped());
    for (const ShardTotal& total : totals) {
        const ShardFile& shard = set.shards[total.shard];
        QStringList devices;
        for (const std::string& device : total.devices) // "(none)": safetensors and DCP record none
            devices.append(device == "(none)" ? QObject::tr("<i>none recorded</i>") : html(device));
        QString where = devices.join(QStringLiteral(", "));
        if (!shard.problem.empty())
            where = QStringLiteral("<span style=\"color:#c0392b\">%1</span>").arg(html(shard.problem));
        out += QStringLiteral("<tr><td style=\"padding-right:12px; white-space:nowrap\">%1</td>"
                              "<td align=\"right\" style=\"padding-right:12px\">%2</td>"
                              "<td align=\"right\" style=\"padding-right:12px; white-space:nowrap\" "
                              "title=\"%3\">%4</td><td>%5</td></tr>")
                   .arg(html(shard.name), QString::fromStdString(formatThousands(total.tensors)),
                       QObject::tr("%1 bytes")
                           .arg(QString::fromStdString(formatThousands(total.bytes)))
                           .toHtmlEscaped(),
                       QString::fromStdString(formatBytes(total.bytes)), where);
    }
    return out + QStringLiteral("</table>");
}

} // namespace

bool isTopOfSet(const Checkpoint& checkpoint, std::uint32_t treeNode)
{
    if (treeNode == 0)
        return true;
    // The tree shows the root's children as its top rows: where there is one ("model"), it stands
    // for the whole set.
    return !checkpoint.tree.empty() && checkpoint.tree[0].children.size() == 1
        && checkpoint.tree[0].children[0] == treeNode;
}

std::vector<ShardTotal> shardTotals(const Checkpoint& checkpoint, std::uint32_t treeNode)
{
    std::vector<ShardTotal> totals;
    if (!checkpoint.shardSet || treeNode >= checkpoint.tree.size())
        return totals;
    const ShardSet& set = *checkpoint.shardSet;
    const bool everyFile = isTopOfSet(checkpoint, treeNode);
    std::vector<ShardTotal> perShard(set.shards.size());
    for (std::size_t k = 0; k < perShard.size(); ++k)
        perShard[k].shard = k;
    // One pass over the subtree: tensors counted where their storage is, storages collected.
    std::vector<std::uint32_t> storages;
    std::vector<std::uint32_t> stack {treeNode};
    while (!stack.empty()) {
        const TreeNode& node = checkpoint.tree[stack.back()];
        stack.pop_back();
        for (const std::uint32_t child : node.children)
            if (child < checkpoint.tree.size())
                stack.push_back(child);
        if (node.tensor < 0 || static_cast<std::size_t>(node.tensor) >= checkpoint.tensors.size())
            continue;
        const std::int32_t storage = checkpoint.tensors[static_cast<std::size_t>(node.tensor)].storage;
        if (storage < 0 || static_cast<std::size_t>(storage) >= set.storageShard.size()
            || set.storageShard[static_cast<std::size_t>(storage)] < 0)
            continue;
        ++perShard[static_cast<std::size_t>(set.storageShard[static_cast<std::size_t>(storage)])].tensors;
        storages.push_back(static_cast<std::uint32_t>(storage));
    }
    // Each storage's bytes once, however many views of it the node holds.
    std::sort(storages.begin(), storages.end());
    storages.erase(std::unique(storages.begin(), storages.end()), storages.end());
    std::vector<std::set<std::string>> devices(set.shards.size());
    for (const std::uint32_t storage : storages) {
        const auto shard = static_cast<std::size_t>(set.storageShard[storage]);
        const StorageRecord& record = checkpoint.storages[storage];
        perShard[shard].bytes += record.nbytes;
        devices[shard].insert(record.device.value_or("(none)"));
    }
    for (std::size_t k = 0; k < perShard.size(); ++k) {
        if (!everyFile && perShard[k].tensors == 0)
            continue;
        perShard[k].devices.assign(devices[k].begin(), devices[k].end());
        totals.push_back(std::move(perShard[k]));
    }
    return totals;
}

DetailsPane::DetailsPane(QWidget* parent)
    : QWidget(parent)
    , m_browser(new QTextBrowser(this))
    , m_valuesJobs(new JobTracker(this))
{
    setObjectName(QStringLiteral("detailsPane"));
    setAccessibleName(tr("Details of the selection"));
    m_browser->setObjectName(QStringLiteral("detailsBrowser"));
    m_browser->setOpenLinks(false);
    m_browser->setFrameShape(QFrame::NoFrame);
    m_browser->setAccessibleName(tr("Details of the selection"));
    connect(m_browser, &QTextBrowser::anchorClicked, this, &DetailsPane::openLink);

    m_values = new QWidget(this);
    m_values->setObjectName(QStringLiteral("valuesSection"));
    m_valuesLabel = new QLabel(m_values);
    m_valuesLabel->setObjectName(QStringLiteral("valuesLabel"));
    m_valuesLabel->setTextFormat(Qt::RichText);
    m_valuesLabel->setWordWrap(true);
    m_valuesLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_valuesLabel->setContentsMargins(4, 0, 4, 0);
    m_valuesChart = new ValuesChartWidget(m_values);
    m_valuesChart->setMinimumHeight(90);
    auto* valuesLayout = new QVBoxLayout(m_values);
    valuesLayout->setContentsMargins(0, 0, 0, 0);
    valuesLayout->setSpacing(2);
    valuesLayout->addWidget(m_valuesLabel);
    valuesLayout->addWidget(m_valuesChart, 1);
    m_values->hide();

    // A splitter: the person decides how much room the histogram gets.
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->setObjectName(QStringLiteral("detailsSplitter"));
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(m_browser);
    splitter->addWidget(m_values);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);
    refresh();
}

void DetailsPane::setDocument(CheckpointDocument* document)
{
    if (m_document)
        disconnect(m_document, nullptr, this, nullptr);
    m_document = document;
    m_treeNode.reset();
    computeValues(std::nullopt);
    if (m_document) {
        connect(m_document, &CheckpointDocument::placementChanged, this, &DetailsPane::refresh);
        connect(m_document, &CheckpointDocument::targetChanged, this, &DetailsPane::refresh);
    }
    refresh();
}

void DetailsPane::showTreeNode(std::optional<std::uint32_t> treeNode)
{
    m_treeNode = treeNode;
    refresh();
    std::optional<std::uint32_t> tensor;
    if (m_document && treeNode && *treeNode < m_document->checkpoint().tree.size()) {
        const std::int32_t index = m_document->checkpoint().tree[*treeNode].tensor;
        if (index >= 0)
            tensor = static_cast<std::uint32_t>(index);
    }
    if (tensor != m_valuesTensor || !tensor)
        computeValues(tensor);
}

QString DetailsPane::valuesText() const
{
    if (m_values->isHidden())
        return {};
    QTextDocument document;
    document.setHtml(m_valuesLabel->text());
    return document.toPlainText();
}

namespace {

QString valueText(double value)
{
    return QString::number(value, 'g', 6);
}

QString statisticsHtml(const TensorValues& statistics)
{
    const auto count = [](std::uint64_t n) { return QString::fromStdString(formatThousands(n)); };
    const auto alarming = [&](std::uint64_t n) {
        return n > 0 ? QStringLiteral("<span style=\"color:#c62828\"><b>%1</b></span>").arg(count(n))
                     : count(n);
    };
    QStringList notes;
    if (!statistics.isRealDomain()) // booleans, magnitudes |z|, int_repr
        notes.append(statistics.domain.toHtmlEscaped());
    if (statistics.copied)
        notes.append(QObject::tr("decoded in chunks"));
    QString out = QStringLiteral("<b>%1</b>").arg(QObject::tr("Values").toHtmlEscaped());
    if (!notes.isEmpty())
        out += QStringLiteral(" <span style=\"color:gray\">(%1)</span>")
                   .arg(notes.join(QStringLiteral(", ")));
    out += QStringLiteral("<table>");
    out += row(QObject::tr("Count"), count(statistics.count));
    out += row(QObject::tr("NaN"), alarming(statistics.nanCount),
        QObject::tr("Not a number: what 0/0, inf-inf or a diverged training step leaves behind"));
    out += row(QObject::tr("+Inf / −Inf"),
        alarming(statistics.positiveInfinityCount) + QStringLiteral(" / ")
            + alarming(statistics.negativeInfinityCount));
    out += row(QObject::tr("Zeros"), count(statistics.zeroCount));
    if (statistics.finiteCount > 0) {
        out += row(QObject::tr("Min … max"),
            valueText(statistics.min) + QStringLiteral(" … ") + valueText(statistics.max),
            QObject::tr("Over the finite values"));
        out += row(QObject::tr("Mean ± std"),
            valueText(statistics.mean) + QStringLiteral(" ± ") + valueText(statistics.std),
            QObject::tr("Over the finite values; std is torch's (unbiased)"));
    } else {
        out += row(QObject::tr("Finite values"), QObject::tr("<i>none</i>"));
    }
    return out + QStringLiteral("</table>");
}

} // namespace

void DetailsPane::setValuesSource(std::shared_ptr<TensorValuesSource> source)
{
    m_valuesSource = std::move(source);
    computeValues(m_valuesTensor);
}

void DetailsPane::computeValues(std::optional<std::uint32_t> tensor)
{
    m_valuesTensor = tensor;
    m_valuesJobs->reset(); // a newer selection makes an older scan stale, and stops it
    if (!tensor || !m_document || !m_valuesSource) {
        m_values->hide();
        m_valuesChart->clear();
        return;
    }
    m_values->show();
    m_valuesChart->clear();
    m_valuesLabel->setText(QStringLiteral("<b>%1</b> <i>%2</i>")
                               .arg(tr("Values").toHtmlEscaped(), tr("computing…").toHtmlEscaped()));
    m_valuesJobs->start(
        [source = m_valuesSource, path = m_document->checkpoint().path, index = *tensor](
            JobProgress& progress) {
            return source->compute(path, index, [&progress] { return !progress.cancelled.load(); });
        },
        [this, index = *tensor](const Expected<TensorValues>& result) {
            if (!result) {
                m_valuesLabel->setText(QStringLiteral("<b>%1</b> <span style=\"color:gray\">%2</span>")
                                           .arg(tr("Values").toHtmlEscaped(), html(result.error().message)));
                m_valuesChart->clear();
            } else {
                m_valuesLabel->setText(statisticsHtml(*result));
                m_valuesChart->setHistogram(
                    result->histogramLow, result->histogramHigh, result->histogramCounts);
            }
            Q_EMIT valuesShown(index);
        });
}

QString DetailsPane::plainText() const
{
    return m_browser->toPlainText();
}

void DetailsPane::openLink(const QUrl& url)
{
    // Links are "tensor:<index>".
    if (url.scheme() != QLatin1String("tensor"))
        return;
    bool ok = false;
    const uint tensor = url.path().toUInt(&ok);
    if (ok && m_document && tensor < m_document->checkpoint().tensors.size())
        Q_EMIT tensorActivated(tensor);
}

void DetailsPane::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    // The HTML bakes in colours: render again for a dark or light palette.
    if (event->type() == QEvent::PaletteChange)
        refresh();
}

void DetailsPane::refresh()
{
    m_browser->document()->setDefaultStyleSheet(
        QStringLiteral("a { color: %1; }").arg(palette().color(QPalette::Link).name()));
    if (!m_document || !m_treeNode || *m_treeNode >= m_document->checkpoint().tree.size()) {
        m_browser->setHtml(QStringLiteral("<p style=\"color:gray\">%1</p>")
                               .arg(tr("Select a tensor or module in the tree to see its storage, "
                                       "the tensors sharing it, and where it sits in the pickle.")
                                        .toHtmlEscaped()));
        return;
    }
    const TreeNode& node = m_document->checkpoint().tree[*m_treeNode];
    m_browser->setHtml(
        node.tensor >= 0 ? tensorHtml(static_cast<std::uint32_t>(node.tensor)) : nodeHtml(*m_treeNode));
}

QString DetailsPane::tensorHtml(std::uint32_t tensorIndex) const
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    const TensorEntry& tensor = checkpoint.tensors[tensorIndex];
    QString out = QStringLiteral("<h3>%1</h3><table>")
                      .arg(html(tensor.name.empty() ? "(root tensor)" : tensor.name.str()));
    out += row(tr("Kind"),
        (tensor.isParameter ? tr("parameter") : tr("tensor")).toHtmlEscaped()
            + (tensor.requiresGrad ? tr(", requires grad").toHtmlEscaped() : QString())
            + (tensor.layout != TensorLayout::Strided
                    ? QStringLiteral(", ") + html(tensorLayoutName(tensor.layout))
                    : QString()));
    out += row(tr("DType"), html(tensor.dtype));
    out += row(tr("Shape"), joinInts(tensor.shape));
    out += row(tr("Stride"), tensor.stride ? joinInts(*tensor.stride) : tr("<i>none (not strided)</i>"));
    out += row(tr("Storage offset"),
        tensor.storageOffset ? tr("%1 elements").arg(*tensor.storageOffset) : tr("<i>none</i>"));
    out += row(tr("View size"), bytesText(tensor.nbytes()));
    out += row(tr("Recorded device"),
        deviceText(tensor.device ? std::optional<std::string>(tensor.device->str()) : std::nullopt),
        kRecordedTip);
    out += row(tr("Planned device"), deviceText(m_document->plannedDeviceOfTensor(tensorIndex)), kPlannedTip);
    if (tensor.storage >= 0) {
        const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
        out += row(tr("Storage key"), html(storage.key.str()), kStorageTip);
        out += row(tr("Storage class"),
            html(storage.storageClass) + QStringLiteral(" (") + html(storage.dtype) + QLatin1Char(')'));
        out += row(tr("Storage size"), bytesText(storage.nbytes), kStorageTip);
        out += row(tr("Stored in"), html(storage.record()));
        if (const ShardFile* shard
            = checkpoint.shardSet ? checkpoint.shardSet->shardOfStorage(tensor.storage) : nullptr)
            out += row(tr("Shard file"), html(shard->name),
                tr("The file of the sharded checkpoint that holds this tensor's bytes."));
        if (storage.dataOffset)
            out += row(tr("Offset in file"),
                tr("byte %1").arg(QString::fromStdString(formatThousands(*storage.dataOffset))));
        if (storage.deflated && storage.bytesReadable())
            out += row(tr("Bytes"),
                tr("deflated in its zip record (%1 bytes once inflated)")
                    .arg(QString::fromStdString(formatThousands(storage.availableBytes.value_or(0)))));
        else if (!storage.bytesComplete())
            out += row(tr("Bytes"),
                tr("<span style=\"color:#c0392b\">incomplete: the file holds %1 of %2 bytes</span>")
                    .arg(QString::fromStdString(formatThousands(storage.availableBytes.value_or(0))),
                        QString::fromStdString(formatThousands(storage.nbytes))));
        QStringList others;
        for (const std::uint32_t other : storage.tensors) {
            if (other == tensorIndex)
                continue;
            const std::string name(checkpoint.tensors[other].name);
            others.append(QStringLiteral("<a href=\"tensor:%1\">%2</a>")
                              .arg(other)
                              .arg(html(name.empty() ? "(root)" : name)));
        }
        out += row(tr("Shares storage with"),
            others.isEmpty() ? tr("<i>no other tensor</i>") : others.join(QStringLiteral("<br>")),
            kStorageTip);
    } else {
        out += row(tr("Storage"),
            tensor.deviceRecordedOutsideStorage
                ? tr("<i>none: the device is recorded in the tensor itself</i>")
                : tr("<i>none</i>"),
            kStorageTip);
    }
    out += row(tr("Pickled path"), html(checkpoint.treePath(tensor.treeNode)));
    out += row(tr("Rebuilt by"), html(tensor.rebuildFunction));
    if (!tensor.subclass.empty())
        out += row(tr("Subclass"), html(tensor.subclass));
    out += QStringLiteral("</table>");
    return out;
}

QString DetailsPane::nodeHtml(std::uint32_t treeNode) const
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    const TreeNode& node = checkpoint.tree[treeNode];
    const std::string path = treeNode == 0 ? std::string("(root)") : checkpoint.treePath(treeNode);
    QString out = QStringLiteral("<h3>%1</h3><table>").arg(html(path));
    out += row(tr("Kind"), html(treeNodeKindName(node.kind)));
    if (!node.className.empty())
        out += row(tr("Class"), html(node.className));
    switch (node.kind) {
    case TreeNodeKind::Placeholder:
        out += QStringLiteral("</table><p>%1</p>")
                   .arg(tr("An object of class %1 that holds no tensor. Its pickle asks to import and "
                           "construct that class, which this tool never does (nothing from the file runs), "
                           "so it is shown by its class name only.")
                            .arg(QString::fromStdString(node.className))
                            .toHtmlEscaped());
        return out;
    case TreeNodeKind::Value:
        out += row(tr("Value"), html(node.summary));
        out += QStringLiteral("</table><p>%1</p>")
                   .arg(
                       tr("A plain value or a container without tensors: it has no device.").toHtmlEscaped());
        return out;
    case TreeNodeKind::Alias:
        out += row(tr("Same object as"), html(node.summary));
        out += QStringLiteral("</table><p>%1</p>")
                   .arg(tr("The pickle references a container already shown elsewhere; its tensors are "
                           "listed there.")
                            .toHtmlEscaped());
        return out;
    default:
        break;
    }
    out += row(tr("Children"), QString::number(node.children.size()));
    const auto bytes = m_document->ledger().moduleBytes(treeNode);
    std::uint64_t total = 0;
    QStringList perDevice;
    for (const auto& [device, n] : bytes) {
        total += n;
        perDevice.append(QStringLiteral("%1: %2").arg(html(device), QString::fromStdString(formatBytes(n))));
    }
    out += row(tr("Storage bytes"), QString::fromStdString(formatBytes(total)), kStorageTip);
    if (!perDevice.isEmpty())
        out += row(tr("Planned devices"), perDevice.join(QStringLiteral("<br>")), kPlannedTip);
    out += QStringLiteral("</table>");
    // A sharded set: the root lists its files; a node spread over several files, its split.
    const std::vector<ShardTotal> totals = shardTotals(checkpoint, treeNode);
    if (isTopOfSet(checkpoint, treeNode) && !totals.empty())
        out += shardTableHtml(checkpoint, totals, tr("Files of the set"));
    else if (totals.size() > 1)
        out += shardTableHtml(checkpoint, totals, tr("Split across shard files"));
    return out;
}

} // namespace ckpt
