#include "detailspane.h"

#include "checkpointdocument.h"

#include <QEvent>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

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

} // namespace

DetailsPane::DetailsPane(QWidget* parent)
    : QWidget(parent)
    , m_browser(new QTextBrowser(this))
{
    setObjectName(QStringLiteral("detailsPane"));
    setAccessibleName(tr("Details of the selection"));
    m_browser->setObjectName(QStringLiteral("detailsBrowser"));
    m_browser->setOpenLinks(false);
    m_browser->setFrameShape(QFrame::NoFrame);
    m_browser->setAccessibleName(tr("Details of the selection"));
    connect(m_browser, &QTextBrowser::anchorClicked, this, &DetailsPane::openLink);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_browser);
    refresh();
}

void DetailsPane::setDocument(CheckpointDocument* document)
{
    if (m_document)
        disconnect(m_document, nullptr, this, nullptr);
    m_document = document;
    m_treeNode.reset();
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
    QString out
        = QStringLiteral("<h3>%1</h3><table>").arg(html(tensor.name.empty() ? "(root tensor)" : tensor.name));
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
    out += row(tr("Recorded device"), deviceText(tensor.device), kRecordedTip);
    out += row(tr("Planned device"), deviceText(m_document->plannedDeviceOfTensor(tensorIndex)), kPlannedTip);
    if (tensor.storage >= 0) {
        const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
        out += row(tr("Storage key"), html(storage.key), kStorageTip);
        out += row(tr("Storage class"),
            html(storage.storageClass) + QStringLiteral(" (") + html(storage.dtype) + QLatin1Char(')'));
        out += row(tr("Storage size"), bytesText(storage.nbytes), kStorageTip);
        out += row(tr("Stored in"), html(storage.record));
        if (storage.dataOffset)
            out += row(tr("Offset in file"),
                tr("byte %1").arg(QString::fromStdString(formatThousands(*storage.dataOffset))));
        if (!storage.bytesComplete())
            out += row(tr("Bytes"),
                tr("<span style=\"color:#c0392b\">incomplete: the file holds %1 of %2 bytes</span>")
                    .arg(QString::fromStdString(formatThousands(storage.availableBytes.value_or(0))),
                        QString::fromStdString(formatThousands(storage.nbytes))));
        QStringList others;
        for (const std::uint32_t other : storage.tensors) {
            if (other == tensorIndex)
                continue;
            const std::string& name = checkpoint.tensors[other].name;
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
    return out;
}

} // namespace ckpt
