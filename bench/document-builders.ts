import { strToU8, Zip, ZipDeflate, zipSync } from 'fflate';

/**
 * Files built by the tests and benchmarks (nothing binary is checked in): the hostile shapes of issue 14
 * and ordinary documents of a given size (bench:ingest).
 */

const CONTENT_TYPES = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`;
const ROOT_RELS = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`;
const DOC_HEAD = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`;
const DOC_TAIL = `</w:body></w:document>`;

const paragraphXml = (text: string) => `<w:p><w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;

/** A valid DOCX whose body is these paragraphs. */
export function docxOf(paragraphs: string[]): Buffer {
  return Buffer.from(
    zipSync({
      '[Content_Types].xml': strToU8(CONTENT_TYPES),
      '_rels/.rels': strToU8(ROOT_RELS),
      'word/document.xml': strToU8(DOC_HEAD + paragraphs.map(paragraphXml).join('') + DOC_TAIL),
    }),
  );
}

/**
 * A zip bomb in DOCX clothing: word/document.xml inflates to about `inflatedBytes` of one repeated
 * paragraph (deflate shrinks it ~1000:1). Streamed, so the test never holds the inflated text.
 */
export function zipBombDocx(inflatedBytes: number): Buffer {
  const parts: Uint8Array[] = [];
  const zip = new Zip((error, chunk) => {
    if (error) throw error;
    parts.push(chunk);
  });
  const add = (name: string, body: string) => {
    const entry = new ZipDeflate(name, { level: 9 });
    zip.add(entry);
    entry.push(strToU8(body), true);
  };
  add('[Content_Types].xml', CONTENT_TYPES);
  add('_rels/.rels', ROOT_RELS);
  const document = new ZipDeflate('word/document.xml', { level: 9 });
  zip.add(document);
  document.push(strToU8(DOC_HEAD));
  const block = strToU8(
    paragraphXml('all work and no play makes a dull document ').repeat(Math.ceil((1024 * 1024) / 80)),
  );
  for (let written = 0; written < inflatedBytes; written += block.length) document.push(block);
  document.push(strToU8(DOC_TAIL), true);
  zip.end();
  return Buffer.concat(parts);
}

/**
 * The same bomb with a lying archive: its central directory claims every entry inflates to 1 KiB, so
 * only inflating (and stopping in time) tells the truth.
 */
export function lyingZipBombDocx(inflatedBytes: number): Buffer {
  const bytes = zipBombDocx(inflatedBytes);
  const end = bytes.length - 22; // end of central directory record, no archive comment
  if (bytes.readUInt32LE(end) !== 0x06054b50) throw new Error('unexpected zip layout');
  const entries = bytes.readUInt16LE(end + 10);
  let at = bytes.readUInt32LE(end + 16);
  for (let i = 0; i < entries; i += 1) {
    if (bytes.readUInt32LE(at) !== 0x02014b50) throw new Error('unexpected central directory');
    bytes.writeUInt32LE(1024, at + 24); // uncompressed size
    at += 46 + bytes.readUInt16LE(at + 28) + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
  }
  return bytes;
}

/**
 * A minimal valid PDF with `pages` pages, each showing one line (`textOf(n)` or "Page n"). Written by
 * hand, byte offsets and all: a cross-reference table pdf.js reads without reconstructing anything.
 */
export function pdfWithPages(pages: number, textOf: (page: number) => string = (page) => `Page ${page}`): Buffer {
  const objects: string[] = [];
  // 1 catalog, 2 page tree, 3 font, then per page: its content stream and the page itself.
  const pageIds = Array.from({ length: pages }, (_, i) => 5 + i * 2);
  objects[1] = `<< /Type /Catalog /Pages 2 0 R >>`;
  objects[2] = `<< /Type /Pages /Count ${pages} /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] >>`;
  objects[3] = `<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>`;
  for (let i = 0; i < pages; i += 1) {
    // Lines of at most 90 characters (pdf.js drops text that runs off the page), 12 pt apart.
    const lines = textOf(i + 1)
      .replace(/[()\\]/g, ' ')
      .match(/.{1,90}(?:\s+|$)/g) ?? [''];
    const stream = `BT /F1 10 Tf 12 TL 20 770 Td ${lines.map((line) => `(${line.trimEnd()}) Tj T*`).join(' ')} ET`;
    objects[4 + i * 2] = `<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`;
    objects[5 + i * 2] =
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${4 + i * 2} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`;
  }
  const chunks: string[] = ['%PDF-1.4\n'];
  let offset = chunks[0].length;
  const offsets: number[] = [0];
  for (let id = 1; id < objects.length; id += 1) {
    offsets[id] = offset;
    const body = `${id} 0 obj\n${objects[id]}\nendobj\n`;
    chunks.push(body);
    offset += Buffer.byteLength(body, 'latin1');
  }
  const xref = [
    `xref\n0 ${objects.length}\n`,
    '0000000000 65535 f \n',
    ...offsets.slice(1).map((at) => `${String(at).padStart(10, '0')} 00000 n \n`),
  ];
  chunks.push(...xref, `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${offset}\n%%EOF\n`);
  return Buffer.from(chunks.join(''), 'latin1');
}

/** `<div>` nested `depth` deep around one sentence. */
export function nestedHtml(depth: number): Buffer {
  return Buffer.from(
    `<!doctype html><html><body>${'<div>'.repeat(depth)}deep inside${'</div>'.repeat(depth)}</body></html>`,
  );
}

const WORDS = (
  'atrium ledger harbor quartz meadow lantern copper violet orbit granite willow falcon ember cobalt prism ' +
  'tundra saffron beacon marble canyon juniper nimbus pepper raven sierra thistle umber vortex walnut zephyr ' +
  'anchor bramble cinder drift estuary fjord glacier hollow island jasper kestrel lagoon mosaic nectar oasis'
).split(' ');

/** Plain prose of about `bytes` bytes: sentences of varied words in paragraphs (deterministic). */
export function proseText(bytes: number, seed = 1): string {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x100000000;
  };
  const paragraphs: string[] = [];
  let size = 0;
  while (size < bytes) {
    const sentences: string[] = [];
    for (let s = 0; s < 4 + Math.floor(next() * 4); s += 1) {
      const words = Array.from({ length: 8 + Math.floor(next() * 10) }, () => WORDS[Math.floor(next() * WORDS.length)]);
      words.push(`n${Math.floor(next() * 100000)}`);
      sentences.push(`${words.join(' ')}.`);
    }
    const paragraph = sentences.join(' ');
    paragraphs.push(paragraph);
    size += paragraph.length + 2;
  }
  return paragraphs.join('\n\n');
}
