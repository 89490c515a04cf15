/* libxml.h — libxml2's xmlwriter, loaded only by the runs that write XML (--junit).
 *
 * Linked, libxml2 would be loaded into every run with what it brings (ICU, the C++ runtime):
 * about 1.6 ms of CPU at each start here, and mappings that each fork copies. Instead,
 * libxml_load() opens it (XML_SONAME, found by configure) and binds the few calls junit.c makes;
 * this header then names them after the library's own functions, so junit.c reads as if linked.
 *
 * libxml_load() must come before the seccomp lock-down, which forbids mapping code: main() calls
 * it whenever --junit is given; a later call only says whether that was done. */
#ifndef RESMON_LIBXML_H
#define RESMON_LIBXML_H

#include <libxml/xmlwriter.h>

struct libxml_api {
    __typeof__(xmlInitParser) *InitParser;
    __typeof__(xmlOutputBufferCreateIO) *OutputBufferCreateIO;
    __typeof__(xmlOutputBufferClose) *OutputBufferClose;
    __typeof__(xmlNewTextWriter) *NewTextWriter;
    __typeof__(xmlFreeTextWriter) *FreeTextWriter;
    __typeof__(xmlTextWriterSetIndent) *TextWriterSetIndent;
    __typeof__(xmlTextWriterSetIndentString) *TextWriterSetIndentString;
    __typeof__(xmlTextWriterStartDocument) *TextWriterStartDocument;
    __typeof__(xmlTextWriterEndDocument) *TextWriterEndDocument;
    __typeof__(xmlTextWriterStartElement) *TextWriterStartElement;
    __typeof__(xmlTextWriterEndElement) *TextWriterEndElement;
    __typeof__(xmlTextWriterWriteAttribute) *TextWriterWriteAttribute;
    __typeof__(xmlTextWriterWriteString) *TextWriterWriteString;
    __typeof__(xmlTextWriterFlush) *TextWriterFlush;
    __typeof__(xmlSetGenericErrorFunc) *SetGenericErrorFunc;
};
extern struct libxml_api libxml;

/* Load libxml2 and bind the calls (once; again: the first answer). 0, or -1 with *ret_error
 * (static or dlerror() text) saying why. The library's own messages ("I/O error : write error")
 * are silenced: the writer's callers say what failed, with the real errno. */
int libxml_load(const char **ret_error);

#ifndef LIBXML_BINDING
#define xmlInitParser libxml.InitParser
#define xmlOutputBufferCreateIO libxml.OutputBufferCreateIO
#define xmlOutputBufferClose libxml.OutputBufferClose
#define xmlNewTextWriter libxml.NewTextWriter
#define xmlFreeTextWriter libxml.FreeTextWriter
#define xmlTextWriterSetIndent libxml.TextWriterSetIndent
#define xmlTextWriterSetIndentString libxml.TextWriterSetIndentString
#define xmlTextWriterStartDocument libxml.TextWriterStartDocument
#define xmlTextWriterEndDocument libxml.TextWriterEndDocument
#define xmlTextWriterStartElement libxml.TextWriterStartElement
#define xmlTextWriterEndElement libxml.TextWriterEndElement
#define xmlTextWriterWriteAttribute libxml.TextWriterWriteAttribute
#define xmlTextWriterWriteString libxml.TextWriterWriteString
#define xmlTextWriterFlush libxml.TextWriterFlush
#define xmlSetGenericErrorFunc libxml.SetGenericErrorFunc
#endif

#endif
